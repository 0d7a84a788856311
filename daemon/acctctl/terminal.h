/* terminal.h - what acctctl knows of its terminal: whether stdout is one
 * and its size, the signals that end or resize a live view, and raw mode for
 * single keys (restored on every exit path). */
#pragma once

#include <signal.h>
#include <stdbool.h>

/* What the output looked like before a pager took it over. */
extern bool stdout_tty;
extern unsigned term_columns, term_lines;

/* Set by SIGINT/SIGTERM (the signal number, or -1 for a quit key) and SIGWINCH. */
extern volatile sig_atomic_t got_quit_signal;
extern volatile sig_atomic_t got_winch;

/* Whether stdout is a terminal and its size (else $COLUMNS and $LINES, else
 * 80x24). Called at start and on SIGWINCH. */
void probe_terminal(void);
/* The width to fit tables into: the terminal's, unless --full or not a tty. */
unsigned output_width(void);
/* Whether acctctl colours what it prints (top: table.h's cell styles):
 * --color=always yes, never no; auto (the default) only when stdout was a
 * terminal, $TERM is set and not "dumb", and $NO_COLOR is unset or empty
 * (https://no-color.org). */
bool colors_enabled(void);

/* SIGINT and SIGTERM interrupt waits (no SA_RESTART) and set got_quit_signal;
 * SIGWINCH sets got_winch. */
void catch_quit_signals(void);
/* From now on a quit signal also shuts the receiving side of socket `fd`
 * (shutdown(SHUT_RD)), so that a wait for a message that may never come
 * (a quiet Watch) ends even when the signal lands between the caller's check
 * of got_quit_signal and its poll(): the read then ends with -ECONNRESET and
 * the caller sees got_quit_signal. -1 turns it off. */
void quit_signal_ends_reads(int fd);

/* Put stdin, when it is a terminal, into non-canonical mode without echo
 * (^C stays a signal), restored by terminal_restore() or at exit. Does
 * nothing when that fails. */
void terminal_raw(void);
/* Whether terminal_raw() took effect (keys can be read). */
bool terminal_is_raw(void);
/* Hide the cursor and clear the screen; terminal_restore() (also at exit)
 * shows it again. */
void terminal_hide_cursor(void);
/* Undo terminal_raw() and terminal_hide_cursor(); idempotent. */
void terminal_restore(void);
