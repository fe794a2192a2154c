// Types of scripts/build-stamp.mjs (plain JavaScript: npm start runs it before anything is compiled).
export declare const INPUTS: ReadonlyArray<string>
export declare const inputsHash: (root: string) => string
/** Why `root`'s dist/ must be built again, or undefined when it is up to date. */
export declare const staleReason: (root: string) => string | undefined
export declare const begin: (root: string) => void
export declare const end: (root: string) => void
