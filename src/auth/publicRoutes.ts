/**
 * `publicRoutes` patterns: `METHOD /path`, where `:name` matches one segment and a trailing `*` any
 * suffix; the method `*` matches every method.
 */
export const compilePublicRoutes = (patterns: ReadonlyArray<string>) => {
  const compiled = patterns.map((pattern) => {
    const [method, path] = pattern.split(" ", 2)
    const prefix = path.endsWith("*")
    const body = (prefix ? path.slice(0, -1) : path)
      .split("/")
      .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("/")
    return { method, regex: new RegExp(`^${body}${prefix ? ".*" : ""}$`) }
  })
  return (method: string, path: string): boolean =>
    compiled.some((route) => (route.method === "*" || route.method === method) && route.regex.test(path))
}
