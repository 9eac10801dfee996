/* File: tests/e2e/no_entry.c
 * A shared library that exports a function but not kcv_kernels: `kcv verify` must refuse it with
 * a one-line error naming the missing symbol (exit 2), not crash. */
int kcv_e2e_not_the_entry_point(int x) { return x + 1; }
