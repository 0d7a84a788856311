/* terminal.c - terminal size, signals and raw mode (see terminal.h). */
#include "terminal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "acctctl.h"

bool stdout_tty;
unsigned term_columns = 80, term_lines = 24;

volatile sig_atomic_t got_quit_signal;
volatile sig_atomic_t got_winch;
static volatile sig_atomic_t quit_wakes_fd = -1;

/* top: a terminal in raw mode for single keys, restored on every exit path. */
static struct termios saved_termios;
static bool termios_saved;
static bool cursor_hidden;

void probe_terminal(void)
{
	struct winsize ws;
	const char *e;

	stdout_tty = isatty(STDOUT_FILENO);
	if (stdout_tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
		term_columns = ws.ws_col;
		term_lines = ws.ws_row > 0 ? ws.ws_row : 24;
		return;
	}
	e = getenv("COLUMNS");
	if (e && atoi(e) > 0)
		term_columns = (unsigned)atoi(e);
	e = getenv("LINES");
	if (e && atoi(e) > 0)
		term_lines = (unsigned)atoi(e);
}

unsigned output_width(void)
{
	return stdout_tty && !arg_full ? term_columns : 0;
}

bool colors_enabled(void)
{
	const char *term = getenv("TERM"), *no_color = getenv("NO_COLOR");

	switch (arg_color) {
	case COLOR_ALWAYS:
		return true;
	case COLOR_NEVER:
		return false;
	default:
		return stdout_tty && term && *term && strcmp(term, "dumb") != 0 && !(no_color && *no_color);
	}
}

void terminal_restore(void)
{
	if (termios_saved) {
		(void)tcsetattr(STDIN_FILENO, TCSANOW, &saved_termios);
		termios_saved = false;
	}
	if (cursor_hidden) {
		/* the cursor back, on a line of its own below the last frame */
		fputs("\033[?25h\n", stdout);
		fflush(stdout);
		cursor_hidden = false;
	}
}

void terminal_raw(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_termios) < 0)
		return;
	t = saved_termios;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* ISIG stays: ^C is SIGINT */
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) < 0)
		return;
	termios_saved = true;
	atexit(terminal_restore);
}

static void on_quit_signal(int sig)
{
	int saved_errno = errno;

	got_quit_signal = sig;
	/* A signal between the caller's last look at got_quit_signal and its
	 * poll() would otherwise be lost until the next message, which on a
	 * quiet Watch never comes. Shutting the socket's receiving side makes
	 * that poll, and every later one, return at once (shutdown(2) is
	 * async-signal-safe). */
	if (quit_wakes_fd >= 0)
		(void)shutdown(quit_wakes_fd, SHUT_RD);
	errno = saved_errno;
}

static void on_winch(int sig)
{
	got_winch = 1;
}

void catch_quit_signals(void)
{
	struct sigaction sa = { .sa_handler = on_quit_signal };

	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_winch;
	(void)sigaction(SIGWINCH, &sa, NULL);
}

void quit_signal_ends_reads(int fd)
{
	quit_wakes_fd = fd;
}

bool terminal_is_raw(void)
{
	return termios_saved;
}

void terminal_hide_cursor(void)
{
	fputs("\033[?25l\033[H\033[2J", stdout); /* hide the cursor, clear */
	cursor_hidden = true;
	if (!termios_saved)
		atexit(terminal_restore);
}
