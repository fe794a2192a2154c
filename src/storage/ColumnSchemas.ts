import { Option, Schema } from "effect"

/** Column schemas shared by the stores' row schemas, for what SQLite and Postgres return alike. */

/** A number: SQLite and Postgres INTEGER give numbers; Postgres BIGINT, NUMERIC, COUNT and SUM give text. */
export const NumberColumn = Schema.Union(Schema.Number, Schema.NumberFromString)

/** A field read from the column `key` (snake_case in SQL). */
export const column = <S extends Schema.Schema.Any, const Key extends string>(schema: S, key: Key) =>
  Schema.propertySignature(schema).pipe(Schema.fromKey(key))

/** A nullable column as an optional field: NULL is no value. */
export const optionalColumn = <S extends Schema.Schema.Any, const Key extends string>(schema: S, key: Key) =>
  Schema.optionalWith(schema, { nullable: true }).pipe(Schema.fromKey(key))

const NullAsUndefined = Schema.transform(Schema.Null, Schema.Undefined, {
  strict: true,
  decode: () => undefined,
  encode: () => null
})

/**
 * JSON text, NULL standing for undefined (which JSON cannot write). NULL is told apart before parsing,
 * so the text `null` stays null.
 */
export const NullableJson = Schema.Union(NullAsUndefined, Schema.parseJson())

/** NullableJson as an optional field: NULL is no value, the text `null` is null. */
export const optionalJson = Schema.optionalToOptional(NullableJson, Schema.Unknown, {
  decode: Option.filter((value) => value !== undefined),
  encode: (value) => value
})
