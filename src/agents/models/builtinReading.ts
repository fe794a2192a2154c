/**
 * How the built-in model reads the user's text, deterministically: which tool the words ask for (by the
 * words of its name and description), and the values the text names (numbers, places, quoted strings,
 * "<parameter> <value>").
 */

// Words that say nothing about which tool is meant ("get" would tie every get_* tool, "two" pick "Add two numbers").
const STOP_WORDS = new Set(
  ("a an the is are was were be been am do does did what whats which who whom how when where why in on at of for " +
    "to from by with about into onto over and or but not no please me my mine i you your we our us it its this that " +
    "these those there here can could would should will shall may might must get gets give tell show find let lets " +
    "some any all just now then than so very much many also like want need know s t " +
    "one two three four five six seven eight nine ten").split(" ")
)

const wordsOf = (text: string): Array<string> => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []

/** A crude stem, enough that "adds", "adding" and "add", or "cities" and "city", meet. */
const stem = (word: string): string => {
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3)
  if (word.length > 4 && word.endsWith("ed")) return word.slice(0, -2)
  if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1)
  return word
}

const contentStems = (text: string): Set<string> =>
  new Set(wordsOf(text).filter((word) => !STOP_WORDS.has(word)).map(stem))

/** "get_weather", "getWeather" and "get-weather" are the words "get" and "weather". */
const nameWords = (name: string): Array<string> => wordsOf(name.replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, "$1 $2"))

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The words, in this order, standing alone in the text (in any case; "_" and "-" as spaces). */
const phrasePattern = (words: ReadonlyArray<string>): string =>
  `(?<![\\p{L}\\p{N}_])${words.map(escapeRegExp).join("[\\s_-]+")}(?![\\p{L}\\p{N}_])`

const mentions = (text: string, name: string): boolean =>
  nameWords(name).length > 0 && new RegExp(phrasePattern(nameWords(name)), "iu").test(text)

export interface ReadableTool {
  readonly name: string
  readonly description?: string | undefined
  readonly inputSchema: unknown
}

type Schema = { readonly [keyword: string]: unknown }
const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** How many numbers the tool needs: its required number parameters. */
const requiredNumbers = (schema: unknown): number => {
  if (!isSchema(schema) || !isSchema(schema.properties) || !Array.isArray(schema.required)) return 0
  const properties = schema.properties
  return schema.required.filter((name) => {
    const property = typeof name === "string" && Object.hasOwn(properties, name) ? properties[name] : undefined
    return isSchema(property) && (property.type === "number" || property.type === "integer")
  }).length
}

/** Named outright: the whole name. */
const NAMED = 100
/** A tool is asked for from this score on: one word of its name or its description. */
const THRESHOLD = 1

/**
 * How strongly the text asks for the tool: the whole name mentioned wins; else 2 for each word of the name
 * and 1 for each other word of the description; then, for a tool that needs numbers, 1 more when the text
 * gives enough of them and 1 less when it does not ("number 5" does not ask for "Add two numbers").
 */
const toolScore = (text: string, said: ReadonlySet<string>, numbers: number, tool: ReadableTool): number => {
  if (mentions(text, tool.name)) return NAMED
  const inName = new Set(nameWords(tool.name).filter((word) => !STOP_WORDS.has(word)).map(stem))
  const inDescription = contentStems(tool.description ?? "")
  let score = 0
  for (const word of said) score += inName.has(word) ? 2 : inDescription.has(word) ? 1 : 0
  const needed = requiredNumbers(tool.inputSchema)
  if (score > 0 && needed > 0) score += numbers >= needed ? 1 : -1
  return score
}

/** The tool the text asks for most (the first listed on a tie), if any asks enough. */
export const pickTool = <T extends ReadableTool>(text: string, tools: ReadonlyArray<T>): T | undefined => {
  const said = contentStems(text)
  const numbers = numbersIn(text).length
  let best: T | undefined
  let bestScore = THRESHOLD - 1
  for (const tool of tools) {
    const score = toolScore(text, said, numbers, tool)
    if (score > bestScore) [best, bestScore] = [tool, score]
  }
  return best
}

export const numbersIn = (text: string): Array<number> =>
  (text.match(/(?<![\p{L}\p{N}.])-?\d+(?:\.\d+)?/gu) ?? []).map(Number)

const PLACE_WORDS = /location|city|place|town|country|region|where|address|destination/i

/** Whether a parameter (by its name or description) wants a place. */
export const wantsPlace = (name: string | undefined, schema: Schema): boolean =>
  PLACE_WORDS.test(name ?? "") || (typeof schema.description === "string" && PLACE_WORDS.test(schema.description))

/** "in New York", "at Oslo", "to Lake Como": the capitalised words after the preposition; else the word after "in". */
export const placeIn = (text: string): string | undefined => {
  const capitalised = /(?<![\p{L}\p{N}])(?:in|at|near|to|from)\s+(\p{Lu}[\p{L}'-]*(?:\s+\p{Lu}[\p{L}'-]*)*)/u.exec(text)
    ?.[1]
  if (capitalised !== undefined) return capitalised
  const word = /(?<![\p{L}\p{N}])in\s+([\p{L}\p{N}'-]+)/iu.exec(text)?.[1]
  return word === undefined || STOP_WORDS.has(word.toLowerCase()) ? undefined : word
}

/** Strings in double, single or typographic quotes, in order. */
export const quotedIn = (text: string): Array<string> =>
  [...text.matchAll(/"([^"]+)"|“([^”]+)”|(?<![\p{L}\p{N}])'([^']+)'(?![\p{L}\p{N}])/gu)].map((match) =>
    match.at(1) ?? match.at(2) ?? match.at(3) ?? ""
  )

/** The value the text gives a parameter by name: "word hello", "city: Oslo", "name is \"Ada Lovelace\"". */
export const valueAfterName = (text: string, name: string | undefined): string | undefined => {
  if (name === undefined || nameWords(name).length === 0) return undefined
  const pattern = new RegExp(
    `${phrasePattern(nameWords(name))}\\s*(?:(?:is|=|:|of|named|called)\\s*)?(?:"([^"]+)"|'([^']+)'|([^\\s,.;:!?"']+))`,
    "iu"
  )
  const match = pattern.exec(text)
  const value = match?.[1] ?? match?.[2] ?? match?.[3]
  return value === undefined || STOP_WORDS.has(value.toLowerCase()) ? undefined : value
}

/**
 * What the text says after the tool's name, without leading filler words ("shout hello" → "hello",
 * "search for cheap flights" → "cheap flights"); the whole text when the name is not there.
 */
export const remainderAfter = (text: string, toolName: string): string => {
  const words = nameWords(toolName)
  const matches = words.flatMap((word) => [...text.matchAll(new RegExp(phrasePattern([word]), "giu"))])
  const end = matches.reduce((last, match) => Math.max(last, match.index + match[0].length), -1)
  const rest = (end === -1 ? text : text.slice(end)).trim().replace(/[\s.!?]+$/u, "")
  const kept = rest.split(/\s+/).filter(Boolean)
  while (kept.length > 0 && STOP_WORDS.has(kept[0]!.toLowerCase().replace(/[^\p{L}\p{N}]/gu, ""))) kept.shift()
  return kept.length > 0 ? kept.join(" ") : text.trim()
}

/** The first of `values` the text names as a word (an enum's choice), if any. */
export const mentionedValue = (text: string, values: ReadonlyArray<unknown>): unknown =>
  values.find((value) =>
    typeof value === "string" && value !== "" && new RegExp(phrasePattern([value]), "iu").test(text)
  )
