/* strv.h - NULL-terminated vectors of owned strings ("strv"), the form in which
 * the configuration keeps glob lists and file names and discovery keeps its
 * filters.
 *
 * A strv is a malloc()ed array of malloc()ed strings ending with NULL; NULL
 * itself is accepted wherever a strv is read and counts as empty. Functions
 * that can fail return 0 or a negative errno (-ENOMEM) and leave their outputs
 * untouched on failure. No I/O, no logging. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "util.h"

/* Free every string and the vector. Accepts NULL; always returns NULL, so that
 * `v = strv_free(v);` is safe. */
char **strv_free(char **v);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* An empty vector ({ NULL }), or NULL on ENOMEM. */
char **strv_new_empty(void);

/* Number of strings before the terminating NULL; 0 for NULL. */
size_t strv_length(char *const *v);

/* Whether a and b hold the same strings in the same order (NULL counts as
 * empty). */
bool strv_equal(char *const *a, char *const *b);

/* Append `s` to *v, which holds *n strings (*v may be NULL when *n is 0).
 * On success `s` belongs to the vector and *n is one more; returns 0. On
 * -ENOMEM nothing changed and `s` is still the caller's. */
int strv_push(char ***v, size_t *n, char *s);

/* As strv_push() with a copy of `s`; `s` stays the caller's either way.
 * Returns 0 or -ENOMEM (nothing changed). */
int strv_push_dup(char ***v, size_t *n, const char *s);

/* Split `s` at blanks (spaces and tabs) into a new vector in *ret, which the
 * caller frees; never NULL on success, maybe empty. Returns 0 or -ENOMEM
 * (*ret untouched). */
int strv_split(const char *s, char ***ret);
/* The same, splitting at any byte of `separators` (as ", \t"). */
int strv_split_set(const char *s, const char *separators, char ***ret);

/* Copy `v` into a new vector in *ret, which the caller frees. NULL and an
 * empty vector both give NULL. Returns 0 or -ENOMEM (*ret untouched). */
int strv_copy(char *const *v, char ***ret);

/* Whether `s` matches any of the fnmatch(3) patterns in `patterns` (no
 * flags). NULL or empty `patterns` match nothing. */
bool strv_fnmatch_any(char *const *patterns, const char *s);
/* The same, but every pattern that matches (not only the first) sets its bit
 * (1 << index, the first 64 patterns) in *hits: which globs ever matched. */
bool strv_fnmatch_mark(char *const *patterns, const char *s, uint64_t *hits);
