import { setFlagsFromString } from "node:v8"

/**
 * How far V8 lets the heap grow past what its last full collection kept, as a percentage (V8's
 * `--heap-growing-percent`), for the service's own process.
 *
 * Left to itself V8 picks the factor from how fast it collects against how fast the program allocates,
 * and a server that allocates steadily gets its maximum, 4: with 2,000 slow agent streams open, each
 * full collection kept 230 to 320 MB and the heap was let grow to 1.0 to 1.4 GB of garbage in between
 * (`--trace-gc`), a resident size of 1.7 GB. At 2 the heap stays within twice what is live, for more
 * frequent (incremental, concurrent) marking. V8 reads the factor at each collection, so setting it
 * from the process at start-up does what the command-line flag would, without the user passing one.
 * Not for embedders: their process's heap is theirs to tune.
 */
export const HEAP_GROWING_PERCENT = 100

export const limitHeapGrowth = (percent: number = HEAP_GROWING_PERCENT) => {
  setFlagsFromString(`--heap-growing-percent=${percent}`)
}
