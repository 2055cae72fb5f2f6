# attnd - build, test and run.  `make help` lists the targets.
#
#   make                 build build/attnd and the test runner (warnings on)
#   make run             install what is missing, build, and start attnd on the
#                        built-in default model (ARGS="--port 9000 ..." adds flags)
#   make test            install what is missing, build, and run every test
#   make deps            install the Debian packages the build needs (root or sudo)
#   make SANITIZER=address|undefined|address,undefined test
#                        the same, instrumented, in build/san-<name>/
#   make valgrind        the tests under valgrind memcheck (no errors, no leaks)
#   make bench           performance against PyTorch / ONNX Runtime (bench/run.sh;
#                        docs/performance.md)
#   make fixtures        regenerate the PyTorch fixtures (installs python3-torch)

CC        ?= cc
PKG       ?= pkg-config
PYTHON    ?= /usr/bin/python3

# Debian packages: what building and testing need; what making fixtures needs.
DEB_BUILD    := gcc make pkg-config libopenblas-dev libjansson-dev libmicrohttpd-dev \
                check libsubunit-dev libcurl4-openssl-dev
DEB_FIXTURES := python3-torch python3-numpy

# ---- flag groups -----------------------------------------------------------
OPT       ?= -O3
DEBUG     := -g
STD       := -std=c11 -D_GNU_SOURCE
WARN      := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wformat=2 -Wpointer-arith -Wcast-qual -Wundef -Wvla
ifeq ($(WERROR),1)
WARN      += -Werror
endif

comma     := ,
BUILD     := build
ifneq ($(SANITIZER),)
BUILD     := build/san-$(subst $(comma),-,$(SANITIZER))
SAN_FLAGS := -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT       := -O1
endif


PKGS_CORE := openblas jansson
PKGS_SRV  := libmicrohttpd
DEP_CFLAGS = $(shell $(PKG) --cflags $(PKGS_CORE) $(PKGS_SRV) 2>/dev/null)
DEP_LIBS   = $(shell $(PKG) --libs $(PKGS_CORE) 2>/dev/null) -lm -lpthread
SRV_LIBS   = $(shell $(PKG) --libs $(PKGS_SRV) 2>/dev/null)
CURL_CFLAGS = $(shell $(PKG) --cflags libcurl 2>/dev/null)
CURL_LIBS   = $(shell $(PKG) --libs libcurl 2>/dev/null)
CHECK_CFLAGS = $(shell $(PKG) --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell $(PKG) --libs check 2>/dev/null)

CFLAGS    ?=
LDFLAGS   ?=
ALL_CFLAGS  = $(STD) $(OPT) $(DEBUG) $(WARN) $(SAN_FLAGS) -MMD -MP -Icore -Iconfig -Iserver \
              $(DEP_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SAN_FLAGS) $(LDFLAGS)

# ---- sources ---------------------------------------------------------------
CORE_SRC  := $(wildcard core/*.c)
CORE_OBJ  := $(CORE_SRC:%.c=$(BUILD)/%.o)
CORE_LIB  := $(BUILD)/libattnd_core.a

CONFIG_SRC := $(wildcard config/*.c)
SERVER_SRC := $(filter-out server/main.c,$(wildcard server/*.c))
APP_OBJ   := $(CONFIG_SRC:%.c=$(BUILD)/%.o) $(SERVER_SRC:%.c=$(BUILD)/%.o)
APP_LIB   := $(BUILD)/libattnd_app.a
ATTND     := $(BUILD)/attnd

TEST_SRC  := $(wildcard tests/*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
TEST_BIN  := $(BUILD)/tests/check_attnd

.PHONY: all run test bench valgrind deps deps-fixtures fixtures clean help format
all: $(ATTND) $(TEST_BIN)

help:
	@sed -n '1,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(CORE_LIB): $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(APP_LIB): $(APP_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(ATTND): $(BUILD)/server/main.o $(APP_LIB) $(CORE_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(SRV_LIBS) $(DEP_LIBS)

$(BUILD)/tests/%.o: ALL_CFLAGS += $(CHECK_CFLAGS) $(CURL_CFLAGS) -DTESTS_DIR='"$(CURDIR)/tests"' \
                                  -DATTND_BIN='"$(CURDIR)/$(ATTND)"'
$(TEST_BIN): $(TEST_OBJ) $(APP_LIB) $(CORE_LIB) | $(ATTND)
	$(CC) $(ALL_LDFLAGS) -o $@ $(TEST_OBJ) $(APP_LIB) $(CORE_LIB) $(CHECK_LIBS) $(CURL_LIBS) \
	  $(SRV_LIBS) $(DEP_LIBS)

# The test runner prints Check's summary line ("100%: Checks: N, Failures: 0,
# Errors: 0") and exits non-zero on any failure.
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(TEST_BIN)
	OPENBLAS_NUM_THREADS=2 $(TEST_BIN)

bench:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(ATTND) $(CORE_LIB)
	bash bench/run.sh

run:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(ATTND)
	$(ATTND) $(ARGS)

# valgrind knows no AVX-512, so OpenBLAS is pinned to its Haswell kernels here;
# Check runs in one process so leaks are seen.
valgrind: $(TEST_BIN)
	CK_FORK=no OPENBLAS_NUM_THREADS=2 OPENBLAS_CORETYPE=Haswell valgrind --quiet \
	  --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
	  --error-exitcode=1 $(TEST_BIN)

# Installs missing Debian packages; does nothing when all are present.
deps:
	@missing=""; for p in $(DEB_BUILD); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

deps-fixtures:
	@$(MAKE) --no-print-directory deps DEB_BUILD="$(DEB_FIXTURES)"

# Regenerates the numeric fixtures from PyTorch (needs python3-torch).
fixtures: deps-fixtures
	$(PYTHON) tools/make_fixtures.py tests/fixtures/torch
	$(PYTHON) tools/make_bad_safetensors.py tests/fixtures/safetensors
	$(PYTHON) tools/make_seed_fixture.py tests/fixtures/seed
	$(PYTHON) tools/make_invalid_requests.py tests/fixtures/requests/invalid
	$(PYTHON) tools/make_openapi.py server/openapi.c

format:
	clang-format -i core/*.[ch] config/*.[ch] server/*.[ch] tests/*.[ch]

clean:
	rm -rf build

-include $(CORE_OBJ:.o=.d) $(APP_OBJ:.o=.d) $(BUILD)/server/main.d $(TEST_OBJ:.o=.d)
