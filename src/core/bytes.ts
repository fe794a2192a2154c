/** A byte count as people read it. */
export const formatBytes = (bytes: number) =>
  bytes >= 1024 * 1024
    ? `${+(bytes / 1024 / 1024).toFixed(1)} MiB`
    : bytes >= 1024
    ? `${+(bytes / 1024).toFixed(1)} KiB`
    : `${bytes} bytes`
