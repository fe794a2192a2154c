/**
 * The text a blocklist or a pattern matches: NFKC (fullwidth and styled letters become plain ones),
 * without format characters (Unicode `Cf`: zero-width spaces and joiners, bidi marks), case-folded.
 * Confusables of other scripts (Unicode TR39, Cyrillic "а" for Latin "a") are not mapped: no kept npm
 * package carries that data (docs/decisions.md, issue #42).
 */
export const normalizeForMatching = (text: string): string =>
  // Upper then lower folds what lower-casing alone keeps apart ("ß" and "SS", "ς" and "σ").
  isPlain(text)
    ? text.toLowerCase()
    : text.normalize("NFKC").replace(FORMAT, "").toUpperCase().toLowerCase().normalize("NFKC")

const FORMAT = /\p{Cf}/gu

// Printable ASCII and whitespace: nothing to normalise but the case, and lower-casing keeps every offset.
const isPlain = (text: string) => /^[\x20-\x7e\t\n\r]*$/.test(text)

/**
 * A run of plain ASCII not followed by a combining mark (lower-cased in place), or a starter with its
 * combining marks (NFKC composes within one, so each is normalised as a whole).
 */
const PIECE = /[\t\n\r\x20-\x7e]+(?!\p{M})|\P{M}\p{M}*|\p{M}+/gu

/**
 * A piece of text's normalised form, and where each of its code units came from: a plain run's unit
 * from the same unit, any other piece's from the whole piece, so a match replaces what made it.
 */
const mapped = (text: string) => {
  let folded = ""
  const at: Array<number> = []
  const from: Array<number> = []
  const to: Array<number> = []
  const plain: Array<boolean> = []
  for (const match of text.matchAll(PIECE)) {
    const piece = match[0]
    const ascii = piece.charCodeAt(0) < 0x80 && isPlain(piece)
    at.push(folded.length)
    from.push(match.index)
    to.push(match.index + piece.length)
    plain.push(ascii)
    folded += ascii ? piece.toLowerCase() : normalizeForMatching(piece)
  }
  /** Where the folded text's unit `index` came from: [start, end) in `text`. */
  const source = (index: number): readonly [number, number] => {
    let low = 0
    let high = at.length - 1
    while (low < high) {
      const middle = (low + high + 1) >> 1
      if (at[middle]! <= index) low = middle
      else high = middle - 1
    }
    return plain[low] ? [from[low]! + index - at[low]!, from[low]! + index - at[low]! + 1] : [from[low]!, to[low]!]
  }
  return { folded, source }
}

/** About this many characters a chunk: mapped piece by piece only when a match falls in it. */
const CHUNK = 4096

// A space or a line break: normalisation never joins what is on either side of one.
const BREAK = /[ \n]/g

/** The offsets where `text`'s chunks start, each cut after a space or line break. */
const chunkStarts = (text: string): Array<number> => {
  const starts = [0]
  for (let next = CHUNK; next < text.length;) {
    BREAK.lastIndex = next
    const found = BREAK.exec(text)
    if (found === null || found.index + 1 >= text.length) break
    starts.push(found.index + 1)
    next = found.index + 1 + CHUNK
  }
  return starts
}

const lastAtOrBefore = (sorted: ReadonlyArray<number>, value: number) => {
  let low = 0
  let high = sorted.length - 1
  while (low < high) {
    const middle = (low + high + 1) >> 1
    if (sorted[middle]! <= value) low = middle
    else high = middle - 1
  }
  return low
}

/**
 * `text` with every match of `pattern` in its normalised form replaced: the characters a match came
 * from are replaced, the rest of the text stays as it was sent. Undefined when nothing matched.
 */
export const replaceNormalized = (text: string, pattern: RegExp, replacement: string): string | undefined => {
  pattern.lastIndex = 0
  const starts = chunkStarts(text)
  const chunks = starts.map((start, index) => text.slice(start, starts[index + 1] ?? text.length))
  const folds = chunks.map(normalizeForMatching)
  const foldStarts: Array<number> = []
  let length = 0
  for (const fold of folds) {
    foldStarts.push(length)
    length += fold.length
  }
  const folded = folds.join("")
  const pieces = new Map<number, ReturnType<typeof mapped> | undefined>()
  /** Where the folded text's unit `index` came from in `text`: within its chunk when the chunk maps piece by piece, else the whole chunk. */
  const source = (index: number): readonly [number, number] => {
    const chunk = lastAtOrBefore(foldStarts, index)
    if (!pieces.has(chunk)) {
      const map = mapped(chunks[chunk]!)
      pieces.set(chunk, map.folded === folds[chunk] ? map : undefined)
    }
    const map = pieces.get(chunk)
    const start = starts[chunk]!
    if (map === undefined) return [start, start + chunks[chunk]!.length]
    const [from, to] = map.source(index - foldStarts[chunk]!)
    return [start + from, start + to]
  }
  let out = ""
  let done = 0
  let found = false
  for (const match of folded.matchAll(pattern)) {
    if (match[0] === "") continue
    const [start] = source(match.index)
    const [, end] = source(match.index + match[0].length - 1)
    if (start < done) continue
    found = true
    out += text.slice(done, start) + replacement
    done = end
  }
  return found ? out + text.slice(done) : undefined
}
