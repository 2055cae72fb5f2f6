# attnd - build, test and run.  `make help` lists the targets.
#
#   make                 build build/attnd and the test runner (warnings on)
#   make run             install what is missing, build, and start attnd on the
#                        built-in default model (ARGS="--port 9000 ..." adds flags)
#   make test            install what is missing, build, and run every test
#   make test-unit       the Check suites' unit and codec tiers alone (no daemon)
#   make test-busy       the Check suites with two busy loops beside them (the
#                        timeouts hold on a shared host; .ci/run runs it)
#   make test-page       the page at / in headless Chromium (make test runs it)
#   make page-screenshots docs/img's pictures of the page, from headless Chromium
#   make openapi-check   the OpenAPI description: lint, a typed client compiled and
#                        run, live responses validated (make test runs it)
#   make docs-examples   every example of docs/api.md (curl, Python, TypeScript) and
#                        of README.md run against the daemon, its output checked
#                        (make test runs it)
#   make layers-check    no file includes a header from a layer above its own, and
#                        every include of core/, config/, server/ names its folder
#                        (make test runs it)
#   make docs-links      every relative link of the docs reaches a file and a heading
#                        (make test runs it)
#   make docs-words      the docs (README.md, DEVELOPERS.md, docs/*.md) within their
#                        word budget, DOCS_WORDS_MAX by wc -w (make test runs it)
#   make openai-check    POST /v1/embeddings through OpenAI's own npm client, against
#                        the sentence-transformers fixtures (make test runs it)
#   make hf-check        Hugging Face's @huggingface/inference client against POST /
#                        (TEI's), every task it sends, on the fixtures (make test runs it)
#   make builtin-check   the built-in model's tokenizer against Hugging Face's, text
#                        in end to end (make test runs it)
#   make k8s-check       deploy/kubernetes/ against the Kubernetes schemas and attnd
#                        (make test runs it)
#   make deps            install the Debian packages the build needs (root or sudo)
#   make deps-node       chromium, node and npm, then the pinned npm packages
#   make SANITIZER=address|undefined|address,undefined test
#                        the same, instrumented, in build/san-<name>/
#   make valgrind        the tests under valgrind memcheck (no errors, no leaks),
#                        then attnd itself under valgrind through the hostile tests
#   make fuzz            each libFuzzer target for FUZZ_SECONDS (default 60)
#   make test-load       64 connections for LOAD_SECONDS (10), then SIGTERM under
#                        load; make soak: the same for SOAK_SECONDS (600)
#   make bench           performance against PyTorch / ONNX Runtime (bench/run.sh;
#                        docs/performance.md)
#   make bench-replicas  1 replica x all CPUs against 1 replica per CPU (docs/deploy.md)
#   make fixtures        regenerate the PyTorch fixtures (installs python3-torch)
#   make test-deploy     3 replicas behind nginx: rolling restart, SIGKILL, 0 failed
#                        requests (deploy/nginx/attnd.conf)
#   make container-check the image built with podman from a fresh clone of HEAD
#                        and its container checked: ldd, --read-only as its user,
#                        HEALTHCHECK, /, /v1/encode, /v2, mounted weights, drain
#                        on podman stop, the Kubernetes Deployment under podman
#                        kube play (root; tools/ci/container_check.sh)
#   make fresh-check     the README's two commands (make run, make test) in a clean
#                        debian:bookworm container, from a clone of HEAD (root;
#                        tools/ci/fresh_check.sh)
#   make compose-check   deploy/compose.yaml under podman-compose: 3 replicas behind
#                        nginx, one drained under load (root; after container-check)

CC        ?= cc
PKG       ?= pkg-config
# attnd's version: the binary (--version, /v1/model, /v2), and info.version of
# the OpenAPI description it serves.  The one place it is written.
VERSION   := 0.1.0
PYTHON    ?= /usr/bin/python3

# Debian packages: what building and testing need; what making fixtures needs.
DEB_BUILD    := gcc make pkg-config libopenblas-dev libjansson-dev libmicrohttpd-dev nettle-dev \
                libutf8proc-dev libonig-dev check libsubunit-dev libcurl4-openssl-dev wamerican
DEB_FIXTURES := python3-torch python3-numpy python3-sentencepiece
# What the page's browser test and the OpenAPI check need (make deps-node).
DEB_NODE     := chromium nodejs npm
# What the docs' examples need besides node (make deps-node): curl, and
# Debian's python3 with requests and numpy (docs/clients.md decodes base64
# and binary tensors with it).
DEB_DOCS     := curl python3-requests python3-numpy
# What make test-deploy needs: nginx (and python3 for the test).
DEB_DEPLOY   := nginx python3
# What make container-check needs: podman with runc and netavark (iptables for
# its port mapping, catatonit for kube play's pods), debootstrap for the base
# image, and the script's tools (kubectl: Debian's kubernetes-client, installed
# by container-check's rule when there is none).
DEB_CONTAINER := podman buildah runc netavark iptables catatonit debootstrap git curl python3
# What make compose-check needs besides: podman-compose, and aardvark-dns for
# the replicas' names on the project's network.
DEB_COMPOSE   := $(DEB_CONTAINER) podman-compose aardvark-dns

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
# Each test case's timeout (tests/timing.h) is written for a plain build;
# CK_TIMEOUT_MULTIPLIER, Check's own, scales them all by TEST_TIME_SCALE:
# 1, TEST_TIME_SCALE_SAN for a sanitizer build, TEST_TIME_SCALE_VALGRIND
# under valgrind.  Each factor keeps every test within a tenth of its
# scaled timeout under that tool on a 2-core host, with room to spare
# (DEVELOPERS.md, "Tests").
TEST_TIME_SCALE_SAN      := 5
TEST_TIME_SCALE_VALGRIND := 30
TEST_TIME_SCALE          := 1
ifneq ($(SANITIZER),)
TEST_TIME_SCALE := $(TEST_TIME_SCALE_SAN)
BUILD     := build/san-$(subst $(comma),-,$(SANITIZER))
SAN_FLAGS := -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT       := -O1
# GCC leaves float-to-int conversions out of -fsanitize=undefined (clang
# does not); converting NaN or an out-of-range float to int is undefined too.
ifneq ($(findstring undefined,$(SANITIZER)),)
SAN_FLAGS += -fsanitize=float-cast-overflow
endif
endif
# Under ASan every byte malloc gives the suites (and the daemons they start)
# is 0xff, a NaN in every float, up to 256 MiB an allocation: a kernel that
# reads memory nobody wrote turns its outputs NaN and fails its test.
# valgrind, which sees such reads, cannot run the AVX-512 kernels.
ifneq ($(findstring address,$(SANITIZER)),)
TEST_ENV := ASAN_OPTIONS=malloc_fill_byte=255:max_malloc_fill_size=268435456
endif


PKGS_CORE := openblas jansson nettle libutf8proc oniguruma
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
# Include paths by layer: core/ sees only itself, so a core file that
# includes a header of config/ or server/ fails to build (make layers-check
# covers what a compiler cannot see: the layers inside server/); the
# daemon and the tests see every layer, each include naming its folder
# ("config/config.h" from the repository's root, "http/server.h" from
# server/, "model/head.h" from core/).
INCLUDES    = -Icore -I. -Iserver
ALL_CFLAGS  = $(STD) $(OPT) $(DEBUG) $(WARN) $(SAN_FLAGS) -MMD -MP $(INCLUDES) \
              -DATTND_VERSION='"$(VERSION)"' $(DEP_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SAN_FLAGS) $(LDFLAGS)

# ---- sources ---------------------------------------------------------------
CORE_SRC  := $(wildcard core/*.c core/*/*.c)
CORE_OBJ  := $(CORE_SRC:%.c=$(BUILD)/%.o)
CORE_LIB  := $(BUILD)/libattnd_core.a

CONFIG_SRC := $(wildcard config/*.c)
SERVER_SRC := $(filter-out server/main.c,$(wildcard server/*.c server/*/*.c))
APP_OBJ   := $(CONFIG_SRC:%.c=$(BUILD)/%.o) $(SERVER_SRC:%.c=$(BUILD)/%.o)
# Files built into the binary as C byte arrays (od and sed, below): the page
# at / (server/page/page.h), the OpenAPI description (server/protocol/openapi.h),
# whose source server/protocol/openapi.json says @VERSION@ where the version goes,
# and the built-in model's tokenizer.json (config/builtin.h), made from
# WORDLIST (Debian's wamerican) by config/builtin_tokenizer.sh.
PAGE_SRC  := server/page/index.html
OPENAPI_SRC := server/protocol/openapi.json
OPENAPI_JSON := $(BUILD)/gen/openapi.json
WORDLIST  ?= /usr/share/dict/american-english
BUILTIN_TOKENIZER := $(BUILD)/gen/builtin_tokenizer.json
APP_OBJ   += $(BUILD)/gen/page.o $(BUILD)/gen/openapi.o $(BUILD)/gen/builtin_tokenizer.o
APP_LIB   := $(BUILD)/libattnd_app.a
ATTND     := $(BUILD)/attnd

TEST_SRC  := $(wildcard tests/*.c) $(wildcard tests/fuzz/fuzz_*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
TEST_BIN  := $(BUILD)/tests/check_attnd

.PHONY: all run test bench valgrind deps deps-fixtures fixtures clean help format fuzz fuzz-build \
        test-load soak container-check
all: $(ATTND) $(TEST_BIN)

help:
	@sed -n '1,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/core/%.o: INCLUDES = -Icore

$(CORE_LIB): $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

# od and sed (coreutils, sed: in every Debian image) write a file's bytes as
# a C array NAME[] and its length NAME_len, declared in HEADER; no xxd or
# Python needed, here or in the Dockerfile's build stage.
#   $(call embed,FILE,HEADER,NAME)
define embed
	@mkdir -p $(dir $@)
	@{ printf '/* Generated by the Makefile from %s (od, sed): edit that file. */\n' '$(1)'; \
	  printf '#include "%s"\n\nconst unsigned char %s[] = {\n' '$(2)' '$(3)'; \
	  od -An -v -tx1 $(1) | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  printf '};\nconst size_t %s_len = sizeof %s;\n' '$(3)' '$(3)'; } >$@.tmp && mv $@.tmp $@
endef

$(BUILD)/gen/page.c: $(PAGE_SRC)
	$(call embed,$<,page/page.h,page_html)

# The served description: the source with its version filled in.
$(OPENAPI_JSON): $(OPENAPI_SRC) Makefile
	@mkdir -p $(dir $@)
	sed 's/@VERSION@/$(VERSION)/' $< >$@.tmp && mv $@.tmp $@

$(BUILD)/gen/openapi.c: $(OPENAPI_JSON)
	$(call embed,$<,protocol/openapi.h,openapi_json)

$(WORDLIST):
	@echo "$@ is missing: make deps installs it (Debian's wamerican)" >&2; exit 1

$(BUILTIN_TOKENIZER): config/builtin_tokenizer.sh $(WORDLIST)
	@mkdir -p $(dir $@)
	sh $< $(WORDLIST) >$@.tmp && mv $@.tmp $@

$(BUILD)/gen/builtin_tokenizer.c: $(BUILTIN_TOKENIZER)
	$(call embed,$<,config/builtin.h,builtin_tokenizer_json)

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# What prints or serves the version is rebuilt when VERSION changes.
$(BUILD)/server/main.o $(BUILD)/server/http/listener.o $(BUILD)/server/http/routes.o: Makefile

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
test: docs-check layers-check docs-words
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(TEST_BIN)
	@rm -rf $(RECORD_DIR) && mkdir -p $(RECORD_DIR)
	ATTND_TEST_RECORD=$(CURDIR)/$(RECORD_DIR) OPENBLAS_NUM_THREADS=2 $(TEST_ENV) \
	  CK_TIMEOUT_MULTIPLIER=$(TEST_TIME_SCALE) $(TEST_BIN)
	@$(MAKE) --no-print-directory test-page
	@$(MAKE) --no-print-directory openapi-check
	@$(MAKE) --no-print-directory docs-examples
	@$(MAKE) --no-print-directory docs-links
	@$(MAKE) --no-print-directory openai-check
	@$(MAKE) --no-print-directory hf-check
	@$(MAKE) --no-print-directory builtin-check
	@$(MAKE) --no-print-directory k8s-check

# The unit and codec tiers of the Check suites alone (tests/suites.h): no
# daemon started, a minute or so; make test runs every tier and the rest.
.PHONY: test-unit
test-unit:
	@$(MAKE) --no-print-directory $(TEST_BIN)
	ATTND_TEST_TIERS=unit,codec OPENBLAS_NUM_THREADS=2 CK_TIMEOUT_MULTIPLIER=$(TEST_TIME_SCALE) \
	  $(TEST_BIN)

# The Check suites with two busy loops beside them, bounded and ended with
# the suites (tests/busy.sh): every test within its timeout on a host that
# is doing other work.  .ci/run runs it after make test.
.PHONY: test-busy
test-busy:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(TEST_BIN)
	CK_TIMEOUT_MULTIPLIER=$(TEST_TIME_SCALE) bash tests/busy.sh $(TEST_BIN)

# The repository stands alone: the contract is docs/contract.md, and no file
# points to a directory outside the repository (the pattern is bracketed so
# that this line does not match itself).
.PHONY: docs-check
docs-check:
	@if grep -rnE --exclude-dir=.git --exclude-dir=build --exclude-dir=node_modules \
	    'shared[/]|steer[i]ng' .; then \
	  echo "docs-check: the lines above point outside the repository"; exit 1; \
	else echo "docs-check: no file points outside the repository"; fi

# The layers include only downwards: core/ (the encoder) includes nothing of
# the daemon; server/codec/ (bytes and numbers) nothing of protocol/, http/
# or runtime/; server/runtime/ (the pool, buffers, metrics) nothing of
# protocol/ or http/; server/protocol/ (the codecs of each API) nothing of
# http/.
.PHONY: layers-check
layers-check:
	@bad=$$( { grep -lE '#include "(protocol|http|codec|runtime|config)/' core/*.[ch] core/*/*.[ch]; \
	  grep -lE '#include "(protocol|http|runtime)/' server/codec/*.[ch]; \
	  grep -lE '#include "(protocol|http)/' server/runtime/*.[ch]; \
	  grep -lE '#include "http/' server/protocol/*.[ch]; } 2>/dev/null ); \
	if [ -n "$$bad" ]; then echo "layers-check: these include a layer above their own:"; \
	  echo "$$bad"; exit 1; else echo "layers-check: every include points down"; fi
	@bare=$$(grep -nE '#include "[^/"]+"' server/*.[ch] server/*/*.[ch] config/*.[ch] core/*/*.[ch] | \
	  grep -v '#include "encoder.h"'); \
	if [ -n "$$bare" ]; then echo "layers-check: these includes name no folder:"; \
	  echo "$$bare"; exit 1; else echo "layers-check: every include names its folder"; fi

# The node tools the tests use come from npm, at the versions package.json
# and package-lock.json pin: playwright-core (the page test), @redocly/cli,
# openapi-typescript, openapi-fetch, typescript, ajv (the OpenAPI check),
# openai (OpenAI's client: make openai-check, docs/api.md's example).
# make deps-node installs Debian's chromium, node and npm where missing, then
# `npm ci` into node_modules/ (never committed; no browser download).
NODE_MODULES := node_modules
NODE_BIN     := $(NODE_MODULES)/.bin
NODE_STAMP   := $(NODE_MODULES)/.installed
.PHONY: test-page page-screenshots deps-page deps-node openapi-check docs-examples docs-links openai-check hf-check builtin-check
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# The page at / in headless Chromium: tests/page/page_test.js drives Debian's
# /usr/bin/chromium from node with playwright-core.  Writes $(BUILD)/page.png.
test-page:
	@$(MAKE) --no-print-directory deps-node
	@$(MAKE) --no-print-directory $(ATTND)
	timeout 300 node tests/page/page_test.js $(ATTND) $(NODE_MODULES) $(BUILD)/page.png

# docs/img's pictures of the page (docs/api.md): the model view, the lines
# view and the rollout on tests/fixtures/hf/bert_text (tests/page/screenshots.js).
page-screenshots:
	@$(MAKE) --no-print-directory deps-node
	@$(MAKE) --no-print-directory $(ATTND)
	timeout 120 node tests/page/screenshots.js $(ATTND) $(NODE_MODULES) docs/img

# The OpenAPI description (docs/api.md, "GET /openapi.json"): lint
# (Redocly, every warning an error) of the source and of the served text; a
# typed client generated from it (openapi-typescript) and compiled with tsc
# --strict (tests/openapi/client.mts), then run against the daemon; every
# route, method, form and error sent and each response validated against its
# schema (ajv), and every response make test's suite recorded in
# $(RECORD_DIR) (tests/openapi/openapi_check.mjs).
OPENAPI_OUT := $(BUILD)/openapi
RECORD_DIR  := $(BUILD)/responses
REDOCLY     := REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(NODE_BIN)/redocly
openapi-check:
	@$(MAKE) --no-print-directory deps-node
	@$(MAKE) --no-print-directory $(ATTND) $(OPENAPI_JSON)
	$(REDOCLY) lint --config tests/openapi/redocly.yaml --format=stylish $(OPENAPI_SRC) $(OPENAPI_JSON)
	@mkdir -p $(OPENAPI_OUT)
	$(NODE_BIN)/openapi-typescript $(OPENAPI_JSON) -o $(OPENAPI_OUT)/schema.d.ts
	cp tests/openapi/client.mts tests/openapi/tsconfig.json $(OPENAPI_OUT)/
	$(NODE_BIN)/tsc -p $(OPENAPI_OUT)
	timeout 300 node tests/openapi/openapi_check.mjs $(ATTND) $(OPENAPI_JSON) $(NODE_MODULES) \
	  $(OPENAPI_OUT)/client.mjs $(wildcard $(RECORD_DIR))

# The examples of the docs (docs/api.md, the reference, first), each run against the daemon:
# every code block marked <!-- example: ROUTE --> (sh with curl, python with
# requests, ts with fetch, compiled with tsc --strict) must exit 0 and print
# each text its "# =>" or "// =>" lines name; every route needs a sh one in
# docs/api.md and a python and a ts one in some page, and a sh block that calls curl on localhost:8080
# must be an example (tests/docs/examples.mjs; the blocks and their outputs
# in $(DOCS_OUT)).
DOCS_OUT := $(BUILD)/docs-examples
DOCS_MD := README.md DEVELOPERS.md $(wildcard docs/*.md)
docs-examples:
	@$(MAKE) --no-print-directory deps-node
	@$(MAKE) --no-print-directory $(ATTND)
	@rm -rf $(DOCS_OUT) && mkdir -p $(DOCS_OUT)
	timeout 300 node tests/docs/examples.mjs $(ATTND) $(NODE_MODULES) $(DOCS_OUT) docs/api.md $(filter-out docs/api.md,$(DOCS_MD))

# Every relative link of the docs reaches a file of the repository and,
# into a Markdown file, one of its headings (GitHub's anchors) or an
# explicit <a id>; a source comment's docs/NAME.md, "Section" names a
# heading the page has; no page's prose names an issue, a session, a commit
# or a count the code can print: tests/docs/links.mjs.
DOCS_POINTERS := $(wildcard core/*.[ch] core/*/*.[ch] config/*.[ch] server/*.c \
  server/*/*.[ch] tests/*.[ch] tests/*/*.mjs tests/*/*.js tools/*/*.py tools/*/*.sh bench/*.sh \
  bench/*.py bench/*.c bench/parts/*.sh) Makefile
docs-links:
	@$(MAKE) --no-print-directory deps-node
	@echo "node tests/docs/links.mjs $(DOCS_MD) --code (the sources)"
	@node tests/docs/links.mjs $(DOCS_MD) --code $(DOCS_POINTERS)

# The docs' word budget: wc -w over README.md, DEVELOPERS.md and docs/*.md.
# A fact goes in the one page a reader looks for it, the others link there.
DOCS_WORDS_MAX := 24825
.PHONY: docs-words
docs-words:
	@n=$$(wc -w $(DOCS_MD) | awk 'END {print $$1}'); \
	if [ "$$n" -gt $(DOCS_WORDS_MAX) ]; then \
	  wc -w $(DOCS_MD); \
	  echo "docs-words: $$n words, over the budget of $(DOCS_WORDS_MAX): cut repetition, link to the page that holds the fact"; exit 1; \
	else echo "docs-words: $$n words of $(DOCS_WORDS_MAX)"; fi

# POST /v1/embeddings through the official `openai` npm client (package.json's
# pin): embeddings.create on tests/fixtures/hf/bert_text (mean, Normalize) and
# roberta_text (CLS) with text.json's texts, by default (base64), as floats,
# with dimensions and as token ids, each embedding against text.safetensors;
# a wrong model name (404) and too many dimensions (400) as the client raises
# them (tests/openai/embeddings_check.mjs).
openai-check:
	@$(MAKE) --no-print-directory deps-node
	@$(MAKE) --no-print-directory $(ATTND)
	timeout 300 node tests/openai/embeddings_check.mjs $(ATTND)

# Hugging Face's own client, @huggingface/inference (npm, package.json's pin),
# pointed at attnd as an endpoint: featureExtraction, sentenceSimilarity,
# textClassification, tokenClassification and fillMask through POST /, each
# checked against attnd's own routes and the fixtures (tests/tei/hf_client_check.mjs).
hf-check:
	@$(MAKE) --no-print-directory deps-node
	@$(MAKE) --no-print-directory $(ATTND)
	timeout 300 node tests/tei/hf_client_check.mjs $(ATTND)

# The built-in model takes text: its tokenizer.json (made at build time from
# WORDLIST) loaded by Hugging Face's tokenizers (npm, package.json's pin)
# against the daemon's /v1/tokenize (texts, hostile ones, pairs, truncation),
# and /v1/encode with text against the same with the library's ids
# (tests/tokenizer/builtin_check.mjs).
builtin-check:
	@$(MAKE) --no-print-directory deps-node
	@$(MAKE) --no-print-directory $(ATTND) $(BUILTIN_TOKENIZER)
	timeout 300 node tests/tokenizer/builtin_check.mjs $(ATTND) $(BUILTIN_TOKENIZER)

# deploy/kubernetes/ (docs/deploy.md): each kustomization built as
# `kubectl apply -k` builds it, every object validated against the Kubernetes
# schemas (kubernetes-models; KEDA's and KServe's kinds by schemas from their
# API types, tests/deploy/schemas/) and against what attnd needs: probes,
# drain, security, selectors, settings attnd knows, a ConfigMap `attnd
# --check-config` accepts, autoscaling on metrics a running attnd exports
# (tests/deploy/k8s_check.mjs).  Built by the kubectl Debian 12 ships
# (kubernetes-client, 1.20.2), installed when there is no kubectl; when the
# kubectl on PATH is another (a vendor's), Debian's is unpacked under
# build/kubernetes-client/ beside it (shared by every $(BUILD); apt-get
# download, dpkg-deb -x: nothing installed over the other, no root needed)
# and both must build the same objects.  make container-check runs the
# Deployment.
.PHONY: k8s-check
k8s-check:
	@$(MAKE) --no-print-directory deps-node
	@command -v kubectl >/dev/null 2>&1 || $(MAKE) --no-print-directory deps DEB_BUILD=kubernetes-client
	@$(MAKE) --no-print-directory $(ATTND)
	@kc=$$(command -v kubectl); deb=build/kubernetes-client; \
	if dpkg -S "$$(readlink -f "$$kc")" 2>/dev/null | grep -q '^kubernetes-client:'; then \
	  set -- "$$kc"; \
	else \
	  if [ ! -x $$deb/usr/bin/kubectl ]; then \
	    echo "k8s-check: $$kc is not Debian's: unpacking Debian's kubernetes-client into $$deb/"; \
	    SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	    get() { (cd $$deb && apt-get -q -o APT::Sandbox::User=root download kubernetes-client); }; \
	    rm -rf $$deb && mkdir -p $$deb && \
	    { get || { $$SUDO apt-get update -qq && get; }; } && \
	    dpkg-deb -x $$deb/kubernetes-client_*.deb $$deb || exit 1; \
	  fi; \
	  set -- "$$kc" $$deb/usr/bin/kubectl; \
	fi; \
	echo "node tests/deploy/k8s_check.mjs $(ATTND) $(NODE_MODULES) $$*"; \
	node tests/deploy/k8s_check.mjs $(ATTND) $(NODE_MODULES) "$$@"

# Sizing a host (docs/deploy.md): 1 replica x every CPU against 1 replica per
# CPU, throughput at B=1 and B=8 (bench/replicas.sh).
.PHONY: bench-replicas
bench-replicas:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(ATTND)
	bash bench/replicas.sh

bench:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(ATTND) $(CORE_LIB) $(APP_LIB)
	bash bench/run.sh

run:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(ATTND)
	$(ATTND) $(ARGS)

# valgrind knows no AVX-512, so OpenBLAS is pinned to its Haswell kernels here;
# Check runs without a fork (CK_FORK=no), so that a leak is seen.
# Then the daemon itself under valgrind (tests/daemon.c runs attnd under
# ATTND_TEST_WRAPPER) through the hostile-client and fault tests: a memory
# error or leak in attnd makes it exit 99, which those tests fail on.
VALGRIND_OPTS := --quiet --leak-check=full --show-leak-kinds=definite,indirect \
                 --errors-for-leak-kinds=definite,indirect
# Timeouts are scaled by TEST_TIME_SCALE_VALGRIND: without a fork Check
# enforces none, but each test's run time is held against its share.  Each
# suite is a run of its own, as many at once as there are CPUs
# (tests/valgrind.sh; VALGRIND_JOBS), since valgrind runs one thread at a time.
VALGRIND_JOBS ?= $(shell nproc)
valgrind: $(TEST_BIN)
	CK_TIMEOUT_MULTIPLIER=$(TEST_TIME_SCALE_VALGRIND) JOBS=$(VALGRIND_JOBS) \
	  VALGRIND_OPTS="$(VALGRIND_OPTS) --error-exitcode=1" bash tests/valgrind.sh $(TEST_BIN)
	CK_RUN_SUITE=hostile OPENBLAS_NUM_THREADS=2 OPENBLAS_CORETYPE=Haswell \
	  CK_TIMEOUT_MULTIPLIER=$(TEST_TIME_SCALE_VALGRIND) \
	  ATTND_TEST_WRAPPER="valgrind $(VALGRIND_OPTS) --error-exitcode=99" $(TEST_BIN)

# ---- load: make test-load (docs/reliability.md) -----------------------------
# LOAD_CONNECTIONS keep-alive connections for LOAD_SECONDS against a daemon on
# 127.0.0.1, then SIGTERM under load; make soak runs it for SOAK_SECONDS.
LOAD_BIN         := $(BUILD)/tests/attnd_load
LOAD_SECONDS     ?= 10
LOAD_CONNECTIONS ?= 64
SOAK_SECONDS     ?= 600

$(LOAD_BIN): $(BUILD)/tests/load/load.o $(BUILD)/tests/daemon.o | $(ATTND)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CURL_LIBS) -lpthread

test-load:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(ATTND) $(LOAD_BIN)
	$(LOAD_BIN) --seconds $(LOAD_SECONDS) --connections $(LOAD_CONNECTIONS) $(LOAD_ARGS)

soak:
	@$(MAKE) --no-print-directory test-load LOAD_SECONDS=$(SOAK_SECONDS)

# Replicas behind nginx (deploy/nginx/attnd.conf, docs/deploy.md): three
# attnd processes and nginx on 127.0.0.1 under a steady load of encode
# requests, each answer checked against a direct one; a rolling restart with
# the drain, a SIGKILL, the killed replica back: 0 failed requests
# (tests/deploy/deploy_test.py, about 35 s; DEPLOY_ARGS adds its options).
.PHONY: test-deploy
test-deploy:
	@$(MAKE) --no-print-directory deps DEB_BUILD="$(DEB_DEPLOY)"
	@$(MAKE) --no-print-directory $(ATTND)
	$(PYTHON) tests/deploy/deploy_test.py --attnd $(ATTND) $(DEPLOY_ARGS)

# The image built with a real engine and its container checked
# (tools/ci/container_check.sh; root).  The images stay for the next run.
container-check:
	@$(MAKE) --no-print-directory deps DEB_BUILD="$(DEB_CONTAINER)"
	@command -v kubectl >/dev/null 2>&1 || $(MAKE) --no-print-directory deps DEB_BUILD=kubernetes-client
	bash tools/ci/container_check.sh

# The README's set-up on a fresh Debian 12 (tools/ci/fresh_check.sh; root): in a
# clean debian:bookworm container (container-check's debootstrap base, with
# nothing added) a clone of HEAD, then the README's two commands in order:
# make run until /health answers 200 and the README's quick start prints what
# it says, SIGTERM, then make test.  About 10 minutes on 2 cores.
.PHONY: fresh-check
fresh-check:
	@$(MAKE) --no-print-directory deps DEB_BUILD="$(DEB_CONTAINER)"
	bash tools/ci/fresh_check.sh $(FRESH_ARGS)

# deploy/compose.yaml under podman-compose: three replicas behind nginx
# (deploy/nginx), /v1 and /v2 through it, one replica drained under load
# (root; after make container-check, whose images it reuses;
# tests/deploy/compose_check.sh).
.PHONY: compose-check
compose-check:
	@$(MAKE) --no-print-directory deps DEB_BUILD="$(DEB_COMPOSE)"
	bash tests/deploy/compose_check.sh

# ---- fuzzing: libFuzzer from Debian's clang (docs/reliability.md) ----------
# make fuzz builds every target with clang -fsanitize=fuzzer,address,undefined
# in $(BUILD)/fuzz/ and runs each for FUZZ_SECONDS over its seeds; a crash
# stops it with the input saved as $(BUILD)/fuzz/crash-<target>-*.  Fix the
# bug, then copy the input to tests/fuzz/regress/<target>/ (make test replays
# that corpus without libFuzzer, tests/check_fuzz.c).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := encode safetensors config v2 tokenizer text
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
DEB_FUZZ     := clang libclang-rt-14-dev
# Seeds besides tests/fuzz/seeds/<target> and tests/fuzz/regress/<target>:
FUZZ_SEEDS_encode      := tests/fixtures/requests/invalid
FUZZ_SEEDS_safetensors := tests/fixtures/safetensors/good tests/fixtures/safetensors/bad \
                          tests/fixtures/safetensors/model
FUZZ_SEEDS_config      :=
FUZZ_SEEDS_v2          :=

$(BUILD)/fuzzers/fuzz_%: tests/fuzz/fuzz_%.c $(APP_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DFUZZ_LIBFUZZER -DTESTS_DIR='"$(CURDIR)/tests"' -fsanitize=fuzzer -o $@ $< \
	  $(APP_LIB) $(CORE_LIB) \
	  $(SRV_LIBS) $(DEP_LIBS)

fuzz-build:
	@$(MAKE) --no-print-directory deps DEB_BUILD="$(DEB_BUILD) $(DEB_FUZZ)"
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) OPT=-O1 \
	  SAN_FLAGS="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" \
	  $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzzers/fuzz_%)

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  dict=""; [ -f tests/fuzz/$$t.dict ] && dict="-dict=tests/fuzz/$$t.dict"; \
	  case $$t in encode) seeds="$(FUZZ_SEEDS_encode)";; \
	    safetensors) seeds="$(FUZZ_SEEDS_safetensors)";; config) seeds="$(FUZZ_SEEDS_config)";; \
	    v2) seeds="$(FUZZ_SEEDS_v2)";; \
	    *) seeds="";; esac; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  OPENBLAS_NUM_THREADS=1 $(FUZZ_BUILD)/fuzzers/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 $$dict \
	    -artifact_prefix=$(FUZZ_BUILD)/crash-$$t- $(FUZZ_BUILD)/corpus/$$t \
	    tests/fuzz/seeds/$$t tests/fuzz/regress/$$t $$seeds >$(FUZZ_BUILD)/$$t.log 2>&1; \
	  rc=$$?; grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::|^==[0-9]+==|^SUMMARY|fuzz property' \
	    $(FUZZ_BUILD)/$$t.log; \
	  [ $$rc = 0 ] || { echo "fuzz $$t FAILED: see $(FUZZ_BUILD)/$$t.log"; exit 1; }; \
	done

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

# Installs the DEB_NODE packages whose command (chromium, node, npm) is missing
# (checked by command, not by package, so a node from elsewhere, such as
# NodeSource's, which bundles npm, is used as it is), the DEB_DOCS packages
# (checked by package: the examples run /usr/bin/python3), then the npm
# packages.
deps-node:
	@missing=""; for p in $(DEB_NODE); do \
	  c=$$p; [ $$p != nodejs ] || c=node; \
	  command -v $$c >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	[ -z "$$missing" ] || $(MAKE) --no-print-directory deps DEB_BUILD="$$missing"
	@$(MAKE) --no-print-directory deps DEB_BUILD="$(DEB_DOCS)"
	@$(MAKE) --no-print-directory $(NODE_STAMP)

deps-page: deps-node

# Regenerates the numeric fixtures from PyTorch (needs python3-torch).
fixtures: deps-fixtures
	$(PYTHON) tools/fixtures/make_fixtures.py tests/fixtures/torch
	$(PYTHON) tools/fixtures/make_hf_fixtures.py tests/fixtures/hf
	$(PYTHON) tools/fixtures/make_modernbert_fixtures.py tests/fixtures/modernbert
	$(PYTHON) tools/fixtures/make_mpnet_fixtures.py tests/fixtures/mpnet
	$(PYTHON) tools/fixtures/make_hf5_fixtures.py tests/fixtures
	$(PYTHON) tools/fixtures/make_head_fixtures.py tests/fixtures/heads
	$(PYTHON) tools/fixtures/make_bad_safetensors.py tests/fixtures/safetensors
	$(PYTHON) tools/fixtures/make_seed_fixture.py tests/fixtures/seed
	$(PYTHON) tools/fixtures/make_autocast_fixture.py tests/fixtures/autocast
	$(PYTHON) tools/fixtures/make_int8_fixture.py tests/fixtures/int8
	$(PYTHON) tools/fixtures/make_invalid_requests.py tests/fixtures/requests/invalid
	$(PYTHON) tools/fixtures/make_textbook_model.py config/textbook.safetensors
	$(PYTHON) tools/fixtures/make_tokenizer_fixtures.py tests/fixtures/tokenizers
	$(MAKE) --no-print-directory deps-node
	node tests/tokenizer/reference.mjs tests/fixtures/tokenizers
	node tests/tokenizer/truncation.mjs tests/fixtures/tokenizers
	$(PYTHON) tools/fixtures/make_text_fixtures.py tests/fixtures/hf
	node tools/fixtures/make_prompt_fixture.mjs tests/fixtures/hf
	$(PYTHON) tools/fixtures/make_reranker_fixture.py tests/fixtures/hf
	$(PYTHON) tools/fixtures/make_pipeline_fixtures.py tests/fixtures/pipelines

format:
	clang-format -i core/*.[ch] core/*/*.[ch] config/*.[ch] server/*.[ch] server/*/*.[ch] tests/*.[ch] tests/fuzz/*.[ch] tests/load/*.c

clean:
	rm -rf build

-include $(CORE_OBJ:.o=.d) $(APP_OBJ:.o=.d) $(BUILD)/server/main.d $(TEST_OBJ:.o=.d) $(BUILD)/tests/load/load.d
