/* schemas.h - each request object's field table (fields.h) beside the
 * schema that describes it in the OpenAPI description
 * (server/protocol/openapi.json, served at GET /openapi.json).
 *
 * REQUEST_SCHEMAS lists, one X(table, pointer) line each, a table a
 * protocol checks a JSON object with and the JSON pointer (RFC 6901: "/"
 * between keys, "~1" for a "/" inside one) of that object's schema in the
 * description.  A route's body is named by its path's requestBody, so that
 * the route and its table stay together; a nested object by the property
 * that holds it.  A table that checks objects in more than one place (the
 * mask's patterns, taken by /v1/encode's mask and by v2's parameters) has a
 * line for each.  The pointer may reach the schema through $ref, or through
 * anyOf/oneOf where one alternative is the object (mask.window: an integer
 * or {left, right}).
 *
 * REQUEST_BODIES_BY_HAND lists the routes whose JSON body no table checks:
 * TEI's, which tei.c reads field by field and whose unknown fields it
 * ignores, as Text Embeddings Inference does.
 *
 * tests/check_fields.c holds the two lists to the description: every field
 * of a table is a property of its schema, of the same type (and choices,
 * range and requiredness where both state them), and every property is a
 * field, the schema closed (additionalProperties false) as fields_check
 * refuses unknown keys; every object a listed schema nests is listed; and
 * every route with a JSON body is in one list or the other.  A new table, a
 * new field or a new route changes this file, the table and the
 * description together. */
#ifndef ATTND_SCHEMAS_H
#define ATTND_SCHEMAS_H

#include "protocol/fields.h"

/* "/paths/<route>/post/requestBody/content/application~1json/schema" */
#define SCHEMA_BODY(route)     "/paths/" route "/post/requestBody/content/application~1json/schema"
#define SCHEMA_COMPONENT(name) "/components/schemas/" name

/* clang-format off */
#define REQUEST_SCHEMAS(X) \
    X(v1_encode_fields, SCHEMA_BODY("~1v1~1encode")) \
    X(options_mask_fields, SCHEMA_COMPONENT("EncodeRequest/properties/mask")) \
    X(options_window_fields, SCHEMA_COMPONENT("Mask/properties/window")) \
    X(options_strided_fields, SCHEMA_COMPONENT("Mask/properties/strided")) \
    X(options_fixed_fields, SCHEMA_COMPONENT("Mask/properties/fixed")) \
    X(options_blocks_fields, SCHEMA_COMPONENT("Mask/properties/blocks")) \
    X(text_tokenize_fields, SCHEMA_BODY("~1v1~1tokenize")) \
    X(openai_embeddings_fields, SCHEMA_BODY("~1v1~1embeddings")) \
    X(predict_fields, SCHEMA_BODY("~1v1~1predict")) \
    X(v2_request_fields, SCHEMA_BODY("~1v2~1models~1{name}~1infer")) \
    X(v2_request_fields, SCHEMA_BODY("~1v2~1models~1{name}~1versions~1{version}~1infer")) \
    X(v2_parameters_fields, SCHEMA_COMPONENT("V2InferRequest/properties/parameters")) \
    X(options_window_fields, SCHEMA_COMPONENT("V2Parameters/properties/window")) \
    X(options_strided_fields, SCHEMA_COMPONENT("V2Parameters/properties/strided")) \
    X(options_fixed_fields, SCHEMA_COMPONENT("V2Parameters/properties/fixed")) \
    X(options_blocks_fields, SCHEMA_COMPONENT("V2Parameters/properties/blocks")) \
    X(v2_input_fields, SCHEMA_COMPONENT("V2InferRequest/properties/inputs/items")) \
    X(v2_input_parameters_fields, SCHEMA_COMPONENT("V2InferInput/properties/parameters")) \
    X(v2_output_fields, SCHEMA_COMPONENT("V2InferRequest/properties/outputs/items")) \
    X(v2_output_parameters_fields, SCHEMA_COMPONENT("V2InferRequestedOutput/properties/parameters"))

#define REQUEST_BODIES_BY_HAND(X) \
    X("/") \
    X("/embed") \
    X("/embed_all") \
    X("/embed_sparse") \
    X("/predict") \
    X("/rerank") \
    X("/similarity") \
    X("/tokenize") \
    X("/decode")
/* clang-format on */

/* The tables, defined by the protocols that check with them. */
#define SCHEMAS_DECLARE(table, pointer) extern const field_table table;
REQUEST_SCHEMAS(SCHEMAS_DECLARE)
#undef SCHEMAS_DECLARE

#endif
