/**
 * The text a blocklist or a pattern matches: NFKC (fullwidth and styled letters become plain ones),
 * without format characters (Unicode `Cf`: zero-width spaces and joiners, bidi marks), case-folded.
 * Confusables of other scripts (Unicode TR39, Cyrillic "а" for Latin "a") are not mapped: no kept npm
 * package carries that data (docs/decisions.md, issue #42).
 */
export const normalizeForMatching = (text: string): string =>
  // Upper then lower folds what lower-casing alone keeps apart ("ß" and "SS", "ς" and "σ").
  isPlain(text) ? text.toLowerCase() : text.normalize("NFKC").replace(FORMAT, "").toUpperCase().toLowerCase().normalize("NFKC")

const FORMAT = /\p{Cf}/gu

// Printable ASCII and whitespace: nothing to normalise but the case, and lower-casing keeps every offset.
const isPlain = (text: string) => /^[\x20-\x7e\t\n\r]*$/.test(text)

/** A starter with its combining marks: NFKC composes within one, so each is normalised as a whole. */
const SEGMENT = /\P{M}\p{M}*|\p{M}+/gu

/**
 * The normalised text with, for each of its code units, where it came from in `text` (the segment it
 * was normalised from), so a match in the normalised text replaces the characters that made it.
 */
const mapped = (text: string) => {
  if (isPlain(text)) return { folded: text.toLowerCase(), from: undefined, to: undefined }
  let folded = ""
  const from: Array<number> = []
  const to: Array<number> = []
  for (const match of text.matchAll(SEGMENT)) {
    const piece = normalizeForMatching(match[0])
    for (let i = 0; i < piece.length; i++) {
      from.push(match.index)
      to.push(match.index + match[0].length)
    }
    folded += piece
  }
  return { folded, from, to }
}

/**
 * `text` with every match of `pattern` in its normalised form replaced: the characters a match came
 * from are replaced, the rest of the text stays as it was sent. Undefined when nothing matched.
 */
export const replaceNormalized = (text: string, pattern: RegExp, replacement: string): string | undefined => {
  const { folded, from, to } = mapped(text)
  pattern.lastIndex = 0
  let out = ""
  let done = 0
  let found = false
  for (const match of folded.matchAll(pattern)) {
    if (match[0] === "") continue
    const start = from === undefined ? match.index : from[match.index]!
    const end = to === undefined ? match.index + match[0].length : to[match.index + match[0].length - 1]!
    if (start < done) continue
    found = true
    out += text.slice(done, start) + replacement
    done = end
  }
  return found ? out + text.slice(done) : undefined
}
