// Types of scripts/embedding-steps.mjs (plain JavaScript so that CI's set-up runs it before any install).
export declare const ROOT: string
export declare const FILES: ReadonlyArray<string>
export interface EmbeddingSteps {
  /** package.json, tsconfig.json, server.ts and client.ts as the README shows them. */
  readonly files: Readonly<Record<string, string>>
  readonly install: ReadonlyArray<string>
  readonly run: ReadonlyArray<string>
}
export declare const sample: (readme: string, name: string) => string
export declare const embeddingSteps: (readme: string) => EmbeddingSteps
export declare const withTarball: (command: string, name: string, tarball: string) => string
/** The file `--prefetch` leaves in npm's cache folder once the cache holds what these steps resolve. */
export declare const prefetchMarker: (steps: EmbeddingSteps) => Promise<string>
export declare const installProject: (
  dir: string,
  steps: EmbeddingSteps,
  options: { readonly name: string; readonly tarball: string; readonly offline: boolean }
) => Promise<void>
export declare const pack: (destination: string) => Promise<{ readonly filename: string; readonly files: ReadonlyArray<{ readonly path: string }> }>
