/** A bad command line: the command prints the error and the help, and exits 2. */
export class UsageError extends Error {}
/** The brain directory (`--brain` or BRAIN_ROOT) does not exist: exits `EXIT_NO_BRAIN`. */
export class BrainMissingError extends Error {}

/** Exit status of `trace` when the run's hash chain is broken (documented in HELP and the README). */
export const EXIT_CHAIN_BROKEN = 3;
/** Exit status of `compile` and `hud` when the brain directory does not exist. */
export const EXIT_NO_BRAIN = 4;
