/* verbs.h - the verbs (verb-*.c) that acctctl.c's verbs[] table dispatches
 * to, after parse_argv() has checked their options and arguments. */
#pragma once

/* The verbs. Each takes its positional arguments (NULL-terminated, counted
 * against verbs[] already) and returns acctctl's exit status. */
int verb_status(char **args);   /* verb-status.c */
int verb_tune(char **args);
int verb_reconcile(char **args);
int verb_reload(char **args);
int verb_list(char **args);     /* verb-list.c */
int verb_top(char **args);      /* verb-top.c */
int verb_show(char **args);     /* verb-show.c */
int verb_watch(char **args);    /* verb-watch.c */
int verb_compare(char **args);  /* verb-compare.c */
int verb_charge(char **args);   /* verb-charge.c */
int verb_usage(char **args);    /* verb-usage.c */
int verb_history(char **args);  /* verb-history.c */
