# A thin driver of meson for the two README commands and a few helpers.
# Everything real lives in meson.build; the Debian packages in tools/debian-packages.

BUILD      ?= build
MESON_OPTS ?=
NINJA      := ninja
SANITIZE_C_ARGS := -fno-sanitize-recover=all -fno-omit-frame-pointer

.PHONY: all deps build run check test check-clang check-sanitize check-asan check-tsan bench mutate clean

all: build

deps:
	@tools/install-deps

$(BUILD)/build.ninja:
	meson setup $(BUILD) --werror $(MESON_OPTS)

build: deps $(BUILD)/build.ninja
	$(NINJA) -C $(BUILD)

# acctd in the foreground on this host, built-in defaults (Ctrl-C stops it).
run: build
	$(BUILD)/daemon/acctd/acctd

# The whole suite: gcc build with warnings as errors, clang build, unit and
# stress tests, then the suite again under ASan+UBSan and the stress and
# integration tests under TSan.
check: build
	meson test -C $(BUILD) --print-errorlogs --num-processes 2
	$(MAKE) check-clang check-sanitize

test: build
	meson test -C $(BUILD) --print-errorlogs --suite unit

check-clang: deps
	[ -f build-clang/build.ninja ] || CC=clang meson setup build-clang --werror -Dslow_tests=false
	$(NINJA) -C build-clang
	meson test -C build-clang --print-errorlogs --suite unit

check-sanitize: check-asan check-tsan

check-asan: deps
	[ -f build-asan/build.ninja ] || CC=clang meson setup build-asan --werror -Dslow_tests=false \
		-Db_sanitize=address,undefined -Db_lundef=false -Dc_args="$(SANITIZE_C_ARGS)"
	$(NINJA) -C build-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		meson test -C build-asan --print-errorlogs --num-processes 2

# TSan needs a fixed address-space layout on kernels with many mmap random
# bits; setarch -R gives it one. The stress tests, the unit tests of threaded
# modules and the daemon's integration tests run under it; tests/tsan.supp silences liburcu's own synchronisation,
# which TSan cannot see in the uninstrumented library.
check-tsan: deps
	[ -f build-tsan/build.ninja ] || CC=clang meson setup build-tsan --werror -Dslow_tests=false \
		-Db_sanitize=thread -Db_lundef=false -Dc_args="$(SANITIZE_C_ARGS)"
	$(NINJA) -C build-tsan
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp \
		setarch -R meson test -C build-tsan --print-errorlogs --suite stress --suite threads --suite integration \
		--num-processes 1

bench: build
	$(BUILD)/tests/bench/bench-counter

# The mutation check (docs/testing.md): plants one-line mistakes in these
# files, one at a time, in a private copy (build-mutate/), and fails unless
# the tests catch 90% and every survivor is listed in tools/mutate/equivalent.
# "make mutate FILES=lib/core/ledger.c" for a subset; MUTATE_OPTS=--all for
# every mutant instead of the sample. Not part of "make check".
MUTATE_FILES := lib/percpu/counter.c lib/percpu/pool.c lib/core/ledger.c lib/core/reconcile.c \
	lib/core/config.c lib/basic/parse.c lib/varlink/varlink.c daemon/acctd/api-dispatch.c lib/core/sampler.c
FILES ?= $(MUTATE_FILES)
mutate: deps
	tools/mutate/mutate.py --files $(FILES) $(MUTATE_OPTS)

clean:
	rm -rf $(BUILD) build-clang build-asan build-tsan build-mutate
