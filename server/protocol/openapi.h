/* openapi.h - the OpenAPI 3 description served at GET /openapi.json.  Its
 * source is server/protocol/openapi.json (edit that); the Makefile fills in
 * the version (@VERSION@) and builds the text into the binary as
 * $(BUILD)/gen/openapi.c, as it does the page (page/page.h).
 * make openapi-check lints it, compiles a typed client from it and validates
 * every live response of the test suite against it (docs/api.md). */
#ifndef ATTND_OPENAPI_H
#define ATTND_OPENAPI_H

#include <stddef.h>

/* The description's bytes (UTF-8 JSON, not NUL-terminated) and their count. */
extern const unsigned char openapi_json[];
extern const size_t openapi_json_len;

#endif
