/**
 * Wire schemas of the model responses surface (SPEC.md §2.6). Filled in with E2.
 */
export {}
