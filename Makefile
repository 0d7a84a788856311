# A thin driver of meson for the two README commands and a few helpers.
# Everything real lives in meson.build; the Debian packages in tools/debian-packages.

BUILD      ?= build
MESON_OPTS ?=
NINJA      := ninja
SANITIZE_C_ARGS := -fno-sanitize-recover=all -fno-omit-frame-pointer

.PHONY: all deps deps-build build build-tests run install check check-alone check-beside-alone check-after-alone check-asan-rest check-tsan-rest side-builds test check-clang check-sanitize check-asan check-tsan check-fuzz fuzz bench mutate soak clean

all: build

# The Debian packages of tools/debian-packages: every section for the test
# targets; only [build] for building, running and installing acctd, so that
# "make run" or "make install" on a host never pulls in the test toolchain
# (a Prometheus server, qemu, debootstrap).
deps:
	@tools/install-deps

deps-build:
	@tools/install-deps build

$(BUILD)/build.ninja:
	meson setup $(BUILD) --werror $(MESON_OPTS)

build: deps-build $(BUILD)/build.ninja
	$(NINJA) -C $(BUILD)

# acctd in the foreground on this host, built-in defaults, an instance of its
# own: socket and history in RUN_DIR, /metrics on a free port (tools/run-acctd
# says why; Ctrl-C stops it). Builds only the two programs, not the tests.
RUN_DIR ?= $(BUILD)/run
run: deps-build $(BUILD)/build.ninja
	$(NINJA) -C $(BUILD) daemon/acctd/acctd daemon/acctctl/acctctl
	meson compile -C $(BUILD) acct-client  # libacct-client, for programs that charge (acct_charge(3))
	tools/run-acctd $(BUILD) $(RUN_DIR)

# Installing (README, docs/systemd.md): a build directory of its own,
# configured for PREFIX (default /usr), so that neither "make run"'s build/
# (meson's default prefix, /usr/local, and the tests) nor an earlier prefix
# decides where the files go: "meson setup" on a directory that exists keeps
# its old prefix and only says "already configured". A directory configured
# for another prefix is set up afresh (changing the prefix in place would keep
# paths meson derived from the old one). "make install DESTDIR=/some/root"
# installs into a staging root.
PREFIX        ?= /usr
INSTALL_BUILD ?= build-install
install: deps-build
	@if [ -f $(INSTALL_BUILD)/build.ninja ] && [ "$$(meson introspect --buildoptions $(INSTALL_BUILD) | \
		python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')" \
		!= "$(PREFIX)" ]; then \
		echo "$(INSTALL_BUILD) is configured for another prefix: setting it up for $(PREFIX)"; \
		rm -rf $(INSTALL_BUILD); \
	fi
	[ -f $(INSTALL_BUILD)/build.ninja ] || meson setup $(INSTALL_BUILD) --prefix=$(PREFIX) \
		--buildtype=debugoptimized -Dtests=disabled $(MESON_OPTS)
	meson install -C $(INSTALL_BUILD) $(if $(DESTDIR),--destdir "$(abspath $(DESTDIR))")

# $(BUILD) as the tests need it. "make run" or "make build" first may have
# configured it before "make deps" installed cmocka, and meson does not look
# for a dependency again by itself: the unit tests would silently not exist.
# A build directory without cmocka is reconfigured once cmocka is installed.
build-tests: deps $(BUILD)/build.ninja
	@if ! meson introspect --dependencies $(BUILD) | grep -q '"name": "cmocka"' && \
		pkg-config --exists cmocka; then \
		echo "$(BUILD) was configured before cmocka was installed: reconfiguring it for the tests"; \
		meson setup --reconfigure $(BUILD); \
	fi
	$(NINJA) -C $(BUILD)

# The whole suite: gcc build with warnings as errors and every test, then the
# suite again under ASan+UBSan and TSan (each over what it looks for: below),
# then each libFuzzer target briefly. The clang builds of these phases are
# the clang check: ASan's compiles every source with warnings as errors and
# runs the whole unit suite, so a plain clang build (make check-clang) would
# only repeat it (docs/testing.md).
# A failed meson test run ends with tools/failure-summary: each failed test's
# reason in a few lines, last, where a CI summary that keeps only the end of
# the output still shows it. $(call WHY,BUILD[,LOGBASE]).
WHY = || { tools/failure-summary $(1) $(2); exit 1; }

# Tests at a time in check, check-asan and check-tsan. Three on these 2-CPU
# machines: an integration file keeps about a quarter of a CPU busy (its
# daemons wait for their intervals, pytest for them), so a third beside two
# fills CPU that two leave idle (ten mid-sized files: 216 s two at a time,
# 158 s four at a time, docs/testing.md); files that must run alone still do.
CHECK_JOBS ?= 3
# Tests at a time in each half of stage 3 of make check (below), which runs
# ASan+UBSan's and TSan's files side by side: four in all.
STAGE3_JOBS ?= 2

# What each sanitizer build runs (docs/testing.md, "What the sanitizer phases
# run"), and the environment it runs in. TSan needs a fixed address-space
# layout on kernels with many mmap random bits; setarch -R gives it one.
# tests/tsan.supp silences liburcu's own synchronisation, which TSan cannot
# see in the uninstrumented library.
ASAN_SUITES := unit stress asan asan-fake asan-alone
TSAN_SUITES := stress threads tsan tsan-fake tsan-alone
ASAN_RUN = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
TSAN_RUN = TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp setarch -R
# $(call SUITES,a b) is "--suite a --suite b"; $(call RUN_TESTS,BUILD,LOGBASE,ARGS)
# runs what the trees built beside the gcc tests hold (--no-rebuild: two runs
# in one tree at once must not both start ninja there), with a log of its own
# (--logbase) and the reasons of its failures last.
SUITES = $(foreach s,$(1),--suite $(s))
RUN_TESTS = meson test -C $(1) --no-rebuild --print-errorlogs --logbase $(2) $(3) $(call WHY,$(1),$(2))

# make check runs in three stages (docs/testing.md, "How make check runs"),
# so that the CPU that the tests which must run alone leave idle does work:
#  1. The gcc build's tests but those that must run alone (suite "alone"),
#     CHECK_JOBS at a time. The ASan+UBSan, TSan and libFuzzer trees are
#     built beside them, one compiler at a time at nice 19, TSan's and the
#     fuzzers' only with what their tests run (tools/suite-targets): they take
#     the CPU the tests leave idle, and a nice-19 job gets about 1.5% of a
#     CPU the tests want. Their output goes to $(BUILD)/side-builds.log,
#     shown where one fails; where the tests fail, the builds are stopped
#     (their own session, killed as a group).
#  2. The tests that must run alone, one at a time: the gcc build's, then
#     ASan+UBSan's and TSan's (suites "asan-alone", "tsan-alone";
#     check-alone). Beside them, one after
#     another, what makes no cgroup, mount or quota on the host
#     (check-beside-alone): the fuzz targets, the ASan+UBSan unit suite but
#     its tests on the host's cgroups (suite "host-cgroups"), TSan's unit
#     tests of threaded modules, then the sanitizer builds' integration files
#     on temporary trees (suites "asan-fake", "tsan-fake"; fake_tree_files in
#     tests/meson.build, checked by test-circles.py), two at a time: they take
#     CPU from the tests alone, as the two CPU hogs every test holds beside do
#     (issue 30), and nothing else.
#  3. Once the tests alone are done, the sanitizer builds' other tests,
#     ASan+UBSan's (host-cgroups, stress, asan) beside TSan's (stress, tsan),
#     STAGE3_JOBS at a time each (check-after-alone), and beside whatever
#     stage 2's second half has left.
# The halves run with make -j2 -Otarget: each one's output comes whole when it
# ends.
SIDE_LOG = $(BUILD)/side-builds.log
check: deps build-tests
	@echo "Building build-asan, build-tsan and build-fuzz beside the tests (nice 19, one job: $(SIDE_LOG))"
	@setsid sh -c 'nice -n 19 $(MAKE) --no-print-directory side-builds SIDE_JOBS=-j1 >$(SIDE_LOG) 2>&1; \
		echo $$? >$(SIDE_LOG).rc' & side=$$!; \
	meson test -C $(BUILD) --print-errorlogs --num-processes $(CHECK_JOBS) --no-suite alone; rc=$$?; \
	if [ $$rc -ne 0 ]; then kill -s TERM -$$side 2>/dev/null; tools/failure-summary $(BUILD); exit 1; fi; \
	echo "Waiting for the builds beside the tests"; wait $$side; \
	if [ "$$(cat $(SIDE_LOG).rc 2>/dev/null)" != 0 ]; then tail -n 60 $(SIDE_LOG); \
		echo "The sanitizer and fuzz builds failed (whole log: $(SIDE_LOG))"; exit 1; fi
	@echo "The tests that must run alone, then the sanitizer builds' tests on the host; beside them the fuzz targets and the sanitizer builds' tests on temporary trees"
	$(MAKE) --no-print-directory -j2 -Otarget check-after-alone check-beside-alone

# ASan's share that must run alone is empty today (every such file is left
# out of ASan for its timing: tests/meson.build); it runs here all the same,
# so that a file put in it later is not skipped by make check.
check-alone:
	$(call RUN_TESTS,$(BUILD),testlog-alone,--suite alone)
	$(ASAN_RUN) $(call RUN_TESTS,build-asan,testlog-alone,--suite asan-alone)
	$(TSAN_RUN) $(call RUN_TESTS,build-tsan,testlog-alone,--suite tsan-alone)

check-beside-alone:
	FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS) $(call RUN_TESTS,build-fuzz,testlog,--suite fuzz --num-processes 2)
	$(ASAN_RUN) $(call RUN_TESTS,build-asan,testlog-unit,--suite unit --no-suite host-cgroups --num-processes 2)
	$(TSAN_RUN) $(call RUN_TESTS,build-tsan,testlog-threads,--suite threads --num-processes 2)
	$(ASAN_RUN) $(call RUN_TESTS,build-asan,testlog-fake,--suite asan-fake --num-processes 2)
	$(TSAN_RUN) $(call RUN_TESTS,build-tsan,testlog-fake,--suite tsan-fake --num-processes 2)

check-after-alone: check-alone
	$(MAKE) --no-print-directory -j2 -Otarget check-asan-rest check-tsan-rest

check-asan-rest:
	$(ASAN_RUN) $(call RUN_TESTS,build-asan,testlog-rest,--suite host-cgroups --suite stress --suite asan --num-processes $(STAGE3_JOBS))

check-tsan-rest:
	$(TSAN_RUN) $(call RUN_TESTS,build-tsan,testlog-rest,--suite stress --suite tsan --num-processes $(STAGE3_JOBS))

# The three clang trees, set up and built (check builds them beside its gcc
# phase with SIDE_JOBS=-j1): ASan's whole (it is the clang check), TSan's and
# the fuzzers' with what their suites run. Not NINJA="ninja -j1": make exports
# a variable set on its command line, and meson takes $$NINJA for the ninja to
# run.
SIDE_JOBS ?=
side-builds: build-asan/build.ninja build-tsan/build.ninja build-fuzz/build.ninja
	$(NINJA) $(SIDE_JOBS) -C build-asan
	t=$$(tools/suite-targets build-tsan $(TSAN_SUITES)) && $(NINJA) $(SIDE_JOBS) -C build-tsan $$t
	t=$$(tools/suite-targets build-fuzz fuzz) && $(NINJA) $(SIDE_JOBS) -C build-fuzz $$t

test: deps build-tests
	meson test -C $(BUILD) --print-errorlogs --suite unit

check-clang: deps
	[ -f build-clang/build.ninja ] || CC=clang meson setup build-clang --werror -Dslow_tests=false
	$(NINJA) -C build-clang
	meson test -C build-clang --print-errorlogs --suite unit $(call WHY,build-clang)

check-sanitize: check-asan check-tsan

build-asan/build.ninja:
	CC=clang meson setup build-asan --werror -Dslow_tests=false \
		-Db_sanitize=address,undefined -Db_lundef=false -Dc_args="$(SANITIZE_C_ARGS)"

# Each sanitizer phase on its own: what it runs in make check, in one run
# (meson test builds what the tests need first).
check-asan: deps build-asan/build.ninja
	$(ASAN_RUN) meson test -C build-asan --print-errorlogs $(call SUITES,$(ASAN_SUITES)) \
		--num-processes $(CHECK_JOBS) $(call WHY,build-asan)

build-tsan/build.ninja:
	CC=clang meson setup build-tsan --werror -Dslow_tests=false \
		-Db_sanitize=thread -Db_lundef=false -Dc_args="$(SANITIZE_C_ARGS)"

check-tsan: deps build-tsan/build.ninja
	$(TSAN_RUN) meson test -C build-tsan --print-errorlogs $(call SUITES,$(TSAN_SUITES)) \
		--num-processes $(CHECK_JOBS) $(call WHY,build-tsan)

# The libFuzzer targets (tests/fuzz, docs/testing.md), each from a temporary
# copy of its seed corpus and regressions: CHECK_FUZZ_SECONDS each in "make
# check", two at a time (a libFuzzer process keeps one CPU busy, and the
# limit is wall time: each target gets a whole CPU for its seconds, as one at
# a time would), FUZZ_SECONDS each in "make fuzz", one at a time with its
# output as it comes. A crash fails the run and leaves its input in
# build-fuzz/fuzz-artifacts/TARGET/; once fixed, it goes into
# tests/fuzz/regressions/TARGET/, which the unit suite replays in every build.
CHECK_FUZZ_SECONDS ?= 10
FUZZ_SECONDS ?= 600
build-fuzz/build.ninja:
	CC=clang meson setup build-fuzz --werror -Dfuzz=true -Dslow_tests=false -Db_lundef=false

check-fuzz: deps build-fuzz/build.ninja
	FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS) meson test -C build-fuzz --print-errorlogs --suite fuzz \
		--num-processes 2 $(call WHY,build-fuzz)

fuzz: deps build-fuzz/build.ninja
	$(NINJA) -C build-fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) meson test -C build-fuzz --no-rebuild --verbose --suite fuzz \
		--num-processes 1

bench: build
	$(BUILD)/tests/bench/bench-counter
	$(BUILD)/tests/bench/bench-charge-slot

# The mutation check (docs/testing.md): plants one-line mistakes in these
# files, one at a time, in a private copy (build-mutate/), and fails unless
# the tests catch 90% and every survivor is listed in tools/mutate/equivalent.
# "make mutate FILES=lib/core/ledger.c" for a subset; MUTATE_OPTS=--all for
# every mutant instead of the sample. Not part of "make check". About 45
# minutes on a quiet 2-CPU machine (history-query.c alone 10; docs/testing.md).
MUTATE_FILES := lib/percpu/counter.c lib/percpu/pool.c lib/core/ledger.c lib/core/reconcile.c \
	lib/config/config.c lib/basic/parse.c lib/varlink/varlink.c daemon/acctd/api-dispatch.c lib/core/sampler.c \
	lib/basic/ptr-table.c daemon/acctctl/human.c daemon/acctctl/table.c lib/history/history-record.c \
	daemon/acctctl/columns.c daemon/acctctl/verb-usage.c daemon/acctctl/verb-show.c lib/core/sampler-bpf.c \
	lib/format/metrics-render.c lib/bpf/bpf-bounds.c lib/cgroup/memcg-bounds.c lib/history/history-query.c \
	lib/core/sampler-prune.c lib/basic/path.c lib/core/sampler-files.c lib/core/sample-values.c \
	lib/core/sample-memory.c lib/core/sample-cpu.c lib/core/sample-io-psi.c lib/core/sample-load.c
FILES ?= $(MUTATE_FILES)
mutate: deps
	tools/mutate/mutate.py --files $(FILES) $(MUTATE_OPTS)

# The soak (tests/soak/soak.py) for an hour: real cgroups created and removed
# at SOAK_RATE a second while clients query, watch and scrape; root only.
# "make soak SOAK_SECONDS=300" for a shorter one. Not part of "make check",
# which runs it for 60 s.
SOAK_SECONDS ?= 3600
SOAK_RATE ?= 200
soak: deps build
	ACCTD=$(BUILD)/daemon/acctd/acctd ACCTCTL=$(BUILD)/daemon/acctctl/acctctl \
		python3 tests/soak/soak.py --seconds $(SOAK_SECONDS) --rate $(SOAK_RATE)

# The Debian packages (debian/, docs/systemd.md "Installing the Debian
# package"): acctd, acctctl, libacct-client0, libacct-client-dev and their
# -dbgsym, built with dpkg-buildpackage -b from a copy of the tree, into
# DEB_DIR (.changes and .buildinfo too). DEB_BUILD_OPTIONS=nocheck skips the
# unit tests. Then: apt install ./build-deb/acctd_*.deb ./build-deb/acctctl_*.deb
DEB_DIR ?= build-deb
.PHONY: deb
deb:
	@tools/install-deps build package
	tools/build-deb.sh $(DEB_DIR)

clean:
	rm -rf $(BUILD) $(INSTALL_BUILD) build-clang build-asan build-tsan build-fuzz build-mutate
