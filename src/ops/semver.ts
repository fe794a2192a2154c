/** Just enough semver for "is the registry's latest newer, and by how much": x.y.z[-pre][+build]. */
export interface Version {
  readonly major: number
  readonly minor: number
  readonly patch: number
  readonly prerelease: ReadonlyArray<string>
}

export type UpdateType = "major" | "minor" | "patch"

const PATTERN = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/

export const parseVersion = (text: string): Version | undefined => {
  const match = PATTERN.exec(text.trim())
  if (match === null) return undefined
  return {
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3]),
    prerelease: match[4] === undefined ? [] : match[4].split(".")
  }
}

const compareIdentifiers = (a: string, b: string): number => {
  const numericA = /^\d+$/.test(a)
  const numericB = /^\d+$/.test(b)
  if (numericA && numericB) return Math.sign(Number(a) - Number(b))
  if (numericA !== numericB) return numericA ? -1 : 1
  return a < b ? -1 : a > b ? 1 : 0
}

// A release ranks above its prereleases; prereleases compare identifier by identifier (semver §11).
const comparePrerelease = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): number => {
  if (a.length === 0 || b.length === 0) return Math.sign(b.length - a.length)
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const order = compareIdentifiers(a[i], b[i])
    if (order !== 0) return order
  }
  return Math.sign(a.length - b.length)
}

export const compareVersions = (a: Version, b: Version): number =>
  Math.sign(a.major - b.major) || Math.sign(a.minor - b.minor) || Math.sign(a.patch - b.patch) ||
  comparePrerelease(a.prerelease, b.prerelease)

/** How `latest` differs from `installed`, or undefined when it is not newer (or either is not semver). */
export const updateType = (installed: string, latest: string): UpdateType | undefined => {
  const from = parseVersion(installed)
  const to = parseVersion(latest)
  if (from === undefined || to === undefined || compareVersions(to, from) <= 0) return undefined
  if (to.major !== from.major) return "major"
  if (to.minor !== from.minor) return "minor"
  return "patch"
}
