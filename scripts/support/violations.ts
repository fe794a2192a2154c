/** What the chaos run found wrong, grouped by kind with a count and the first example of each. */
export class Violations {
  private readonly byKind = new Map<string, { count: number; example: string }>()

  add(kind: string, example: string) {
    const entry = this.byKind.get(kind)
    if (entry) entry.count++
    else this.byKind.set(kind, { count: 1, example: example.slice(0, 2_000) })
  }

  get total() {
    let total = 0
    for (const { count } of this.byKind.values()) total += count
    return total
  }

  summary(): ReadonlyArray<{ readonly kind: string; readonly count: number; readonly example: string }> {
    return [...this.byKind].map(([kind, { count, example }]) => ({ kind, count, example }))
  }
}
