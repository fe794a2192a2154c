/**
 * A dynamically imported package's exports. In the esbuild bundle (dist/main.js) a package imported
 * as CommonJS (the OTLP exporters, the Prometheus exporter) arrives as `default` alone; run from the
 * tsc output, or for a package with an ES module build, it arrives as it is.
 */
export const exportsOf = <M extends object>(module: M): M => (module as { readonly default?: M }).default ?? module
