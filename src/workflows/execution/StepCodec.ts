import type { SchemaAST } from "effect"
import { Either, ParseResult, Schema } from "effect"
import { codePath, nonJsonValue } from "../../core/jsonValue.js"
import type { Step, WorkflowDefinition } from "../definition/Workflow.js"

/**
 * How an execution's values are stored and read back (issue #30): the input, every step output with a
 * schema, suspension and resume data are stored ENCODED by their schema and decoded when the execution
 * goes on, in whatever process, so a step sees a `Date` (or a class instance) whether the step before
 * it ran here or before a crash. A value without a schema is stored as it is (plain JSON, checked by
 * `nonJsonValue`). A schema whose encoded and decoded forms are the same ("plain": no transformation or
 * declaration in it, every JSON-shaped schema) costs what it did before: the value is checked and
 * stored as it is, and read back without decoding.
 */

type AnySchema = Schema.Schema.AnyNoContext

/** Properties the schema does not describe are kept both ways, as a plain schema's value keeps them (and as the result is written). */
const preserve = { onExcessProperty: "preserve" } as const

const plainCache = new WeakMap<SchemaAST.AST, boolean>()

const plainAst = (ast: SchemaAST.AST, seen: Set<SchemaAST.AST>): boolean => {
  switch (ast._tag) {
    case "Declaration":
    case "Transformation":
      return false
    case "Refinement":
      return plainAst(ast.from, seen)
    case "Union":
      return ast.types.every((member) => plainAst(member, seen))
    case "TupleType":
      return ast.elements.every((element) => plainAst(element.type, seen)) &&
        ast.rest.every((rest) => plainAst(rest.type, seen))
    case "TypeLiteral":
      return ast.propertySignatures.every((property) => plainAst(property.type, seen)) &&
        ast.indexSignatures.every((index) => plainAst(index.type, seen))
    case "Suspend":
      if (seen.has(ast)) return true
      seen.add(ast)
      return plainAst(ast.f(), seen)
    case "Literal":
    case "UniqueSymbol":
    case "Enums":
    case "TemplateLiteral":
    case "AnyKeyword":
    case "UnknownKeyword":
    case "NeverKeyword":
    case "VoidKeyword":
    case "UndefinedKeyword":
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword":
    case "BigIntKeyword":
    case "SymbolKeyword":
    case "ObjectKeyword":
      return true
  }
}

/** Whether a value of `schema` is its own encoded form (no transformation or declaration in it). */
export const isPlain = (schema: Schema.Schema.Any): boolean => {
  const known = plainCache.get(schema.ast)
  if (known !== undefined) return known
  const plain = plainAst(schema.ast, new Set())
  plainCache.set(schema.ast, plain)
  return plain
}

/**
 * A value of the schema's type in its stored form: encoded (which checks it); a plain schema's value
 * checked as before and stored as it is. No schema: the value as it is.
 */
export const encodeValue = (
  schema: Schema.Schema.Any | undefined,
  value: unknown
): Either.Either<unknown, ParseResult.ParseError> => {
  if (schema === undefined) return Either.right(value)
  if (isPlain(schema)) {
    return Either.map(Schema.decodeUnknownEither(schema as Schema.Schema<unknown>)(value), () => value)
  }
  return Schema.encodeUnknownEither(schema as Schema.Schema<unknown, unknown>, preserve)(value)
}

/** A value just decoded by `schema`, in its stored form (a plain schema's: the value). */
export const storedForm = (
  schema: Schema.Schema.Any,
  decoded: unknown
): Either.Either<unknown, ParseResult.ParseError> =>
  isPlain(schema)
    ? Either.right(decoded)
    : Schema.encodeUnknownEither(schema as Schema.Schema<unknown, unknown>, preserve)(decoded)

/**
 * A stored form decoded by its schema. A plain schema's form is the value: checked only when
 * `checked` (the schema may not be the one it was stored with), else handed on as it is.
 */
export const decodeValue = (
  schema: Schema.Schema.Any | undefined,
  stored: unknown,
  checked: boolean
): Either.Either<unknown, ParseResult.ParseError> => {
  if (schema === undefined) return Either.right(stored)
  if (isPlain(schema)) {
    return checked
      ? Either.map(Schema.decodeUnknownEither(schema as Schema.Schema<unknown>)(stored), () => stored)
      : Either.right(stored)
  }
  return Schema.decodeUnknownEither(schema as Schema.Schema<unknown>, preserve)(stored)
}

/**
 * Decoded when it decodes, else as stored: rows from before issue #30 held the input and resume data
 * as the JSON of their decoded values, which a schema whose encoded form differs (not a Date, a
 * class or a JSON-shaped one: those read back either way) may not decode. The step gets what it got then.
 */
const decodedOrStored = (schema: Schema.Schema.Any | undefined, stored: unknown) =>
  Either.getOrElse(decodeValue(schema, stored, false), () => stored)

/** The schema of the data after a step, given the one before it (undefined: stored as it is). */
const schemaAfter = (step: Step, before: AnySchema | undefined): AnySchema | undefined => {
  if (step.outputSchema !== undefined) return step.outputSchema
  switch (step.type) {
    case "andTap":
    case "andSleep":
    case "andSleepUntil":
      return before
    case "andWhen":
      return eitherOf([before, step.step.outputSchema])
    case "andAll":
      return step.steps.some((inner) => inner.outputSchema !== undefined)
        ? Schema.Tuple(...step.steps.map((inner) => inner.outputSchema ?? Schema.Unknown))
        : undefined
    case "andRace":
      return eitherOf(step.steps.map((inner) => inner.outputSchema))
    case "andWorkflow":
      // The child's result: what its type says the step gives.
      return step.workflow.result
    case "andForEach":
      return step.step.outputSchema === undefined ? undefined : Schema.Array(step.step.outputSchema)
    case "andDoWhile":
    case "andDoUntil":
      return step.step.outputSchema
    case "andBranch":
      return step.branches.some((branch) => branch.step.outputSchema !== undefined)
        ? Schema.Tuple(...step.branches.map((branch) => Schema.UndefinedOr(branch.step.outputSchema ?? Schema.Unknown)))
        : undefined
    case "andThen":
    case "andAgent":
    case "andMap":
      return undefined
  }
}

/** One of these schemas (the first that fits), or any value when one of them is missing; none when all are. */
const eitherOf = (schemas: ReadonlyArray<AnySchema | undefined>): AnySchema | undefined => {
  const given = schemas.filter((schema): schema is AnySchema => schema !== undefined)
  if (given.length === 0) return undefined
  const members = given.length < schemas.length ? [...given, Schema.Unknown] : given
  return members.length === 1 ? members[0] : Schema.Union(...members)
}

interface Schemas {
  /** `[i]`: the schema of the data step `i` gets (`[0]` the input's; `[steps.length]` the last step's output's). */
  readonly data: ReadonlyArray<AnySchema | undefined>
  /** The schema of each entry of the `steps` record, by id (top-level and inner steps). */
  readonly entries: ReadonlyMap<string, AnySchema | undefined>
}

const schemasCache = new WeakMap<WorkflowDefinition, Schemas>()

export const schemasOf = (definition: WorkflowDefinition): Schemas => {
  const known = schemasCache.get(definition)
  if (known !== undefined) return known
  const data: Array<AnySchema | undefined> = [definition.input]
  const entries = new Map<string, AnySchema | undefined>()
  definition.steps.forEach((step, i) => {
    data.push(schemaAfter(step, data[i]))
    entries.set(step.id, data[i + 1])
    for (const inner of innerSteps(step)) entries.set(inner.id, inner.outputSchema)
  })
  const schemas = { data, entries }
  schemasCache.set(definition, schemas)
  return schemas
}

/** The inner steps whose outputs are entries of the `steps` record (besides the step's own). */
export const innerSteps = (step: Step) =>
  step.type === "andAll" || step.type === "andRace" ? step.steps : step.type === "andWhen" ? [step.step] : []

const mismatch = (error: ParseResult.ParseError) =>
  `output does not match its schema: ${ParseResult.TreeFormatter.formatErrorSync(error)}`

/** Why a stored form cannot be written as JSON, if it cannot: `a bigint at .total`; a Date, Map, Set or instance "without an outputSchema". */
const nonJson = (written: unknown, schema: AnySchema | undefined): string | undefined => {
  const found = nonJsonValue(written, { strict: true })
  if (found === undefined) return undefined
  const at = found.path.length === 0 ? found.what : `${found.what} at ${codePath(found.path)}`
  // An object JSON hands back as something else (`a Date`, `a Map`, `an instance of Credit`): a schema would keep it.
  return schema === undefined && /^an? ([A-Z]|instance of )/.test(found.what)
    ? `${at} without an outputSchema`
    : at
}

/** What a step's completion stores, or the failure (`step X: ...` / `step X returned ...`) that ends the execution. */
export type Stored = Either.Either<{ readonly data: unknown; readonly entries: Record<string, unknown> }, string>

/**
 * The stored forms of the output of step `index` (`output`, given the data it got, live and stored) and of
 * its inner steps' entries in `stepData`. Data passed through unchanged keeps its stored form.
 */
export const storedOutput = (
  definition: WorkflowDefinition,
  index: number,
  output: unknown,
  given: { readonly live: unknown; readonly stored: unknown },
  stepData: Readonly<Record<string, unknown>>
): Stored => {
  const step = definition.steps[index]
  const { data: schemas, entries: entrySchemas } = schemasOf(definition)
  const schema = schemas[index + 1]
  const entries: Record<string, unknown> = {}
  for (const inner of innerSteps(step)) {
    if (!Object.hasOwn(stepData, inner.id)) continue
    const encoded = encodeValue(entrySchemas.get(inner.id), stepData[inner.id])
    if (Either.isLeft(encoded)) return Either.left(`step ${inner.id}: ${mismatch(encoded.left)}`)
    entries[inner.id] = encoded.right
  }
  if (output === given.live && schema === schemas[index]) {
    // Passed on (a tap, a false andWhen): encoded, its stored form stands; as it is, it is checked as any output.
    if (schema !== undefined && !isPlain(schema)) return Either.right({ data: given.stored, entries })
    const problem = nonJson(output, schema)
    return problem === undefined
      ? Either.right({ data: output, entries })
      : Either.left(`step ${step.id} returned ${problem}`)
  }
  const last = schema === undefined && index === definition.steps.length - 1
  // The last step's output is the result: without a schema of its own, the result schema writes it
  // when it fits (when it does not, the ending says so, as before).
  const encoded = last
    ? Either.orElse(encodeValue(definition.result, output), () => Either.right(output))
    : encodeValue(schema, output)
  if (Either.isLeft(encoded)) return Either.left(`step ${step.id}: ${mismatch(encoded.left)}`)
  const problem = nonJson(encoded.right, last && encoded.right !== output ? definition.result : schema)
  return problem === undefined
    ? Either.right({ data: encoded.right, entries })
    : Either.left(`step ${step.id} returned ${problem}`)
}

/** A step's output checked against its `outputSchema` (a child workflow's step: nothing of it is stored). */
export const checkOutput = (
  step: { readonly outputSchema?: AnySchema | undefined },
  value: unknown
): string | undefined =>
  Either.match(encodeValue(step.outputSchema, value), { onLeft: mismatch, onRight: () => undefined })

/** The values an execution goes on with, decoded from their stored forms. */
export interface Continuing {
  readonly input: unknown
  readonly data: unknown
  readonly stepData: Record<string, unknown>
  readonly resumeData: unknown
}

type StoredExecution = {
  readonly input: unknown
  readonly stepIndex: number
  readonly currentData?: unknown
  readonly stepData: Readonly<Record<string, unknown>>
  readonly resumeData?: unknown
}

/**
 * The data step `stepIndex` would be handed, decoded with the schema of the data before it (the
 * preceding step's output schema, or the input's): a failure says why it does not fit. A step after
 * one without a schema gets the stored data unchecked.
 */
export const handedData = (
  definition: WorkflowDefinition,
  stepIndex: number,
  stored: unknown
): Either.Either<unknown, string> => {
  const schema = schemasOf(definition).data[Math.min(stepIndex, definition.steps.length)]
  return Either.mapLeft(decodeValue(schema, stored, true), (error) => {
    const before = stepIndex === 0
      ? "the workflow's input schema"
      : `the output schema of step ${definition.steps[stepIndex - 1].id}`
    return `the data step ${definition.steps[stepIndex]?.id ?? "(end)"} would be handed does not match ${before}: ${
      ParseResult.TreeFormatter.formatErrorSync(error)
    }`
  })
}

/**
 * An execution's stored values decoded to go on from `stepIndex`. `checked`: the data the step gets
 * comes from another predecessor (a resume at another step, a changed definition) and must fit the
 * schema of the one before it now.
 */
export const restore = (
  definition: WorkflowDefinition,
  execution: StoredExecution,
  checked: boolean
): Either.Either<Continuing, string> => {
  const { data: schemas, entries } = schemasOf(definition)
  const index = Math.min(execution.stepIndex, definition.steps.length)
  const data = checked
    ? handedData(definition, index, execution.currentData)
    : Either.right(decodedOrStored(schemas[index], execution.currentData))
  return Either.map(data, (data) => {
    const stepData: Record<string, unknown> = {}
    for (const [id, stored] of Object.entries(execution.stepData)) {
      stepData[id] = decodedOrStored(entries.get(id), stored)
    }
    const resumeSchema = definition.steps[index]?.resumeSchema ?? definition.resumeSchema
    return {
      input: decodedOrStored(definition.input, execution.input),
      data,
      stepData,
      resumeData: execution.resumeData === undefined ? undefined : decodedOrStored(resumeSchema, execution.resumeData)
    }
  })
}
