/** How many streams one /rpc connection may have open at once; another is refused with `TooManyRequests`. */
export const MAX_STREAMS_PER_CONNECTION = 64

/** How many /rpc connections one caller (a token's user, else an address) may hold; another handshake is a 429. */
export const MAX_CONNECTIONS_PER_CALLER = 16
