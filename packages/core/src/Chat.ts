/**
 * Wire schemas of the chat completions surface (SPEC.md §2.4, §2.5). Filled in with E1.
 */
export {}
