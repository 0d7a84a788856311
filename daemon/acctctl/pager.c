/* pager.c - the pager (see pager.h). */
#include "pager.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acctctl.h"
#include "terminal.h"

static pid_t pager_pid = -1;

void pager_close(void)
{
	if (pager_pid <= 0)
		return;
	fflush(stdout);
	(void)fclose(stdout); /* EOF for the pager */
	(void)close(STDOUT_FILENO);
	while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
		;
	pager_pid = -1;
}


void pager_open(void)
{
	const char *pager = getenv("ACCTD_PAGER");
	int fds[2];
	pid_t pid;

	if (!arg_pager || !stdout_tty || pager_pid > 0)
		return;
	if (!pager)
		pager = getenv("PAGER");
	if (pager && (!*pager || strcmp(pager, "cat") == 0))
		return;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		(void)close(fds[0]);
		(void)close(fds[1]);
		return;
	}
	if (pid == 0) {
		char buf[4096];
		ssize_t n;

		if (dup2(fds[0], STDIN_FILENO) < 0)
			_exit(EXIT_FAIL);
		(void)setenv("LESS", "FRSXMK", 0);
		(void)setenv("LESSCHARSET", "utf-8", 0);
		if (pager)
			execl("/bin/sh", "sh", "-c", pager, (char *)NULL);
		else {
			execlp("less", "less", (char *)NULL);
			execlp("more", "more", (char *)NULL);
		}
		/* no pager at all: copy, so that nothing is lost */
		while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0)
			if (write(STDOUT_FILENO, buf, (size_t)n) != n)
				break;
		_exit(EXIT_OK);
	}
	if (dup2(fds[1], STDOUT_FILENO) < 0) {
		(void)close(fds[0]);
		(void)close(fds[1]);
		return;
	}
	(void)close(fds[0]);
	(void)close(fds[1]);
	pager_pid = pid;
	/* the pager handles ^C itself; we must not die before it has everything */
	signal(SIGINT, SIG_IGN);
	atexit(pager_close);
}
