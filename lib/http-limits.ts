/** The request limits every platform server applies (lib/http.ts). */

/** The largest request body any platform server reads (a route may set less). */
export const BODY_LIMIT = 256 * 1024;
/** The longest path parameter (a uuid is 36, a tenant name 30); longer → 414. */
export const MAX_PARAM_LENGTH = 100;
/** How deep a JSON body may nest: deeper → 400 before any handler walks it. */
export const MAX_DEPTH = 32;
