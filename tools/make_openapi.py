#!/usr/bin/python3
"""Writes server/protocol/openapi.c: the OpenAPI 3 description attnd serves at
/openapi.json, kept here as Python data so it is easy to read and edit.

Usage: /usr/bin/python3 tools/make_openapi.py server/protocol/openapi.c
"""
import json
import sys

VERSION = "0.1.0"


def err(desc):
    return {"description": desc,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def json_body(ref, desc):
    return {"description": desc,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/" + ref}}}}


SCHEMAS = {
    "Error": {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["type", "message"], "properties": {
            "type": {"type": "string", "enum": [
                "invalid_request", "unauthorized", "not_found", "method_not_allowed", "too_large",
                "unsupported_media_type", "queue_full", "internal", "not_implemented",
                "unavailable"]},
            "message": {"type": "string", "description": "What was wrong and where (field and index)."}}}}},
    "Window": {"oneOf": [
        {"type": "integer", "minimum": 0},
        {"type": "object", "additionalProperties": False, "properties": {
            "left": {"type": "integer", "minimum": 0}, "right": {"type": "integer", "minimum": 0}}}]},
    "Mask": {"type": "object", "additionalProperties": False, "properties": {
        "causal": {"type": "boolean"},
        "window": {"$ref": "#/components/schemas/Window"},
        "global": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "key_padding": {"type": "array", "items": {},
                        "description": "bool[B][L] (or bool[L] for one sequence); true = padding"},
        "attn": {"type": "array", "items": {},
                 "description": "bool or number, [L][L] or [B][L][L]; true = not allowed, numbers are added to the scaled scores"},
        "strided": {"$ref": "#/components/schemas/Strided"},
        "fixed": {"$ref": "#/components/schemas/Fixed"},
        "blocks": {"$ref": "#/components/schemas/Blocks"}},
        "description": "The pattern options (window, strided, fixed, blocks) are a union, and the global positions' rows and columns join it; no pattern option means every pair. Padding, causal and attn then restrict it (docs/model.md)."},
    "Strided": {"type": "object", "additionalProperties": False, "required": ["stride"],
                "description": "Sparse Transformer's strided pattern: |i - j| < stride or (i - j) mod stride = 0",
                "properties": {"stride": {"type": "integer", "minimum": 1, "maximum": 2147483647}}},
    "Fixed": {"type": "object", "additionalProperties": False, "required": ["block", "summary"],
              "description": "Sparse Transformer's fixed pattern: floor(i/block) = floor(j/block) or j mod block >= block - summary; summary < block",
              "properties": {"block": {"type": "integer", "minimum": 1, "maximum": 2147483647},
                             "summary": {"type": "integer", "minimum": 0, "maximum": 2147483646}}},
    "Blocks": {"type": "object", "additionalProperties": False, "required": ["size"],
               "description": "BigBird's block-sparse pattern: with qb = floor(i/size), kb = floor(j/size): |qb - kb| <= window, qb < global, kb < global, or kb is one of the random blocks drawn for qb (the generator: docs/model.md)",
               "properties": {"size": {"type": "integer", "minimum": 1, "maximum": 2147483647},
                              "window": {"type": "integer", "minimum": 0, "maximum": 2147483647, "default": 0},
                              "global": {"type": "integer", "minimum": 0, "maximum": 2147483647, "default": 0},
                              "random": {"type": "integer", "minimum": 0, "maximum": 2147483647, "default": 0},
                              "seed": {"type": "integer", "minimum": 0, "default": 0}}},
    "CsrAttention": {"type": "object", "required": ["indptr", "indices", "values"],
                     "description": "one sequence's weights of its allowed pairs, row by row, keys ascending; with encoding base64 the three are strings (little-endian int32, int32, float32) and the *_shape fields are present",
                     "properties": {
                         "indptr": {"description": "int[len + 1]"},
                         "indices": {"description": "int[nnz]: key positions"},
                         "values": {"description": "number[n_heads][nnz] (heads) or number[nnz] (mean)"},
                         "indptr_shape": {"type": "array", "items": {"type": "integer"}},
                         "indices_shape": {"type": "array", "items": {"type": "integer"}},
                         "values_shape": {"type": "array", "items": {"type": "integer"}}}},
    "EncodeRequest": {"type": "object", "additionalProperties": False, "properties": {
        "embeddings": {"type": "array", "items": {},
                       "description": "number[B][L][d_model] or number[L][d_model]"},
        "embeddings_b64": {"type": "string", "format": "byte",
                           "description": "base64 of little-endian float32, row-major; needs shape"},
        "shape": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3},
        "lengths": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        "mask": {"$ref": "#/components/schemas/Mask"},
        "attention": {"type": "string", "enum": ["heads", "mean", "none"], "default": "heads"},
        "attention_layers": {"oneOf": [
            {"type": "string", "enum": ["last", "all"]},
            {"type": "array", "items": {"type": "integer", "minimum": 0}}], "default": "last"},
        "precision": {"type": "integer", "minimum": 1, "maximum": 9, "default": 9},
        "encoding": {"type": "string", "enum": ["json", "base64"], "default": "json"},
        "attention_format": {"type": "string", "enum": ["dense", "csr"], "default": "dense",
                             "description": "csr: each sequence's weights of its allowed pairs only (CsrAttention); limits.max_attention_bytes then counts allowed pairs, not L^2"}}},
    "Usage": {"type": "object", "properties": {
        "sequences": {"type": "integer"}, "tokens": {"type": "integer"},
        "queue_ms": {"type": "number"}, "compute_ms": {"type": "number"},
        "attention_scores": {"type": "integer", "description": "query-key scores computed, every head and layer (masked entries of partially masked tiles included)"}}},
    "EncodeResponse": {"type": "object", "required": ["model", "shape", "outputs", "usage"], "properties": {
        "model": {"type": "string"},
        "shape": {"type": "array", "items": {"type": "integer"}},
        "outputs": {"description": "numbers with the input's nesting (ragged with lengths), or base64 string(s) with encoding base64"},
        "attention": {"description": "the last layer's weights: [B][n_heads][L][L] (heads) or [B][L][L] (mean); with attention_format csr a CsrAttention per sequence (an array of them for batched input); absent with attention none"},
        "attention_layers": {"type": "array", "items": {"type": "object", "properties": {
            "layer": {"type": "integer"}, "attention": {}}}},
        "outputs_shape": {"description": "with encoding base64"},
        "attention_shape": {"description": "with encoding base64"},
        "usage": {"$ref": "#/components/schemas/Usage"}}},
    "Model": {"type": "object", "properties": {
        "name": {"type": "string"}, "hyperparameters": {"type": "object"},
        "parameters": {"type": "integer"},
        "weights": {"type": "object", "properties": {
            "source": {"type": "string"}, "sha256": {"type": "string", "nullable": True}}},
        "limits": {"type": "object"}, "max_body_bytes": {"type": "integer"},
        "version": {"type": "string"}}},
    "Health": {"type": "object", "properties": {
        "status": {"type": "string", "enum": ["ok", "starting", "shutting_down"]}}},
}

PATHS = {
    "/v1/encode": {"post": {
        "summary": "Encode token embeddings; return outputs and attention weights",
        "parameters": [{"name": "X-Request-Id", "in": "header", "required": False,
                        "schema": {"type": "string", "maxLength": 128}}],
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/EncodeRequest"}}}},
        "responses": {
            "200": {"description": "outputs and attention",
                    "headers": {"X-Request-Id": {"schema": {"type": "string"}},
                                "X-Queue-Ms": {"schema": {"type": "number"}},
                                "X-Compute-Ms": {"schema": {"type": "number"}}},
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EncodeResponse"}}}},
            "400": err("malformed JSON or an invalid field"),
            "401": err("missing or wrong API key"),
            "405": err("not POST"),
            "413": err("body over server.max_body_bytes, or batch / sequence / token / attention size over the limits"),
            "415": err("Content-Type is not application/json"),
            "429": err("the compute queue is full; see Retry-After"),
            "503": err("starting or shutting down")}}},
    "/health": {"get": {"summary": "Readiness", "security": [], "responses": {
        "200": json_body("Health", "ready"),
        "503": json_body("Health", "starting or shutting down")}}},
    "/v1/model": {"get": {
        "summary": "Hyperparameters, parameter count, weights source and sha256, limits",
        "responses": {"200": json_body("Model", "the model"),
                      "401": err("missing or wrong API key"), "503": err("starting")}}},
    "/metrics": {"get": {"summary": "Prometheus metrics", "responses": {
        "200": {"description": "text exposition format 0.0.4",
                "content": {"text/plain": {"schema": {"type": "string"}}}},
        "401": err("missing or wrong API key")}}},
    "/openapi.json": {"get": {"summary": "This document", "responses": {
        "200": {"description": "OpenAPI 3", "content": {"application/json": {"schema": {"type": "object"}}}},
        "401": err("missing or wrong API key")}}},
    "/": {"get": {
        "summary": "A page that runs /v1/encode and draws the attention weights as heatmaps",
        "description": "One self-contained HTML page (script and style inline, no external "
                       "resources). It needs no API key; it sends the key typed into its form "
                       "with its own requests.",
        "security": [], "responses": {
            "200": {"description": "the page",
                    "content": {"text/html": {"schema": {"type": "string"}}}}}}},
}

# ---- the Open Inference Protocol (KServe v2) with Triton's binary tensor data
# extension (server/protocol/v2.c; docs/api.md has the details).


def v2err(desc):
    return {"description": desc,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/V2Error"}}}}


def v2body(ref, desc):
    return {"description": desc,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/" + ref}}}}


V2_EMPTY = {"description": "yes (empty body)"}
V2_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"},
           "description": "the model's name (model.name, \"encoder\" by default)"}
V2_VERSION = {"name": "version", "in": "path", "required": True,
              "schema": {"type": "string", "enum": ["1"]}, "description": "the model's one version"}
V2_PARAMS = {"type": "object", "description": "$parameters: string, number or boolean values"}

SCHEMAS.update({
    "V2Error": {"type": "object", "required": ["error"],
                "properties": {"error": {"type": "string", "description": "What was wrong and where."}}},
    "V2ServerMetadata": {"type": "object", "properties": {
        "name": {"type": "string"}, "version": {"type": "string"},
        "extensions": {"type": "array", "items": {"type": "string"},
                       "description": "[\"binary_tensor_data\"]"}}},
    "V2TensorMetadata": {"type": "object", "properties": {
        "name": {"type": "string"}, "datatype": {"type": "string"},
        "shape": {"type": "array", "items": {"type": "integer"}, "description": "-1: variable"}}},
    "V2ModelMetadata": {"type": "object", "properties": {
        "name": {"type": "string"}, "versions": {"type": "array", "items": {"type": "string"}},
        "platform": {"type": "string"},
        "inputs": {"type": "array", "items": {"$ref": "#/components/schemas/V2TensorMetadata"},
                   "description": "embeddings FP32 [-1, -1, d_model], lengths INT32 [-1]"},
        "outputs": {"type": "array", "items": {"$ref": "#/components/schemas/V2TensorMetadata"},
                    "description": "outputs FP32 [-1, -1, d_model], attention FP32 [-1, n_heads, -1, -1]"}}},
    "V2InferRequest": {"type": "object", "required": ["inputs"], "additionalProperties": False, "properties": {
        "id": {"type": "string", "description": "echoed in the response"},
        "model_name": {"type": "string"}, "model_version": {"type": "string"},
        "parameters": {"type": "object", "additionalProperties": False, "properties": {
            "attention": {"type": "string", "enum": ["heads", "mean", "none"], "default": "heads"},
            "causal": {"type": "boolean"},
            "window": {"description": "an integer, {left, right}, or a string holding either"},
            "window_left": {"type": "integer", "minimum": 0},
            "window_right": {"type": "integer", "minimum": 0},
            "global": {"description": "int[] positions, or a string holding that JSON"},
            "key_padding": {"description": "bool[B][L] (true = padding), or a string holding that JSON"},
            "attn": {"description": "bool or number [L][L] or [B][L][L], or a string holding that JSON"},
            "strided": {"description": "as /v1/encode's mask.strided, or a string holding that JSON"},
            "fixed": {"description": "as /v1/encode's mask.fixed, or a string holding that JSON"},
            "blocks": {"description": "as /v1/encode's mask.blocks, or a string holding that JSON"},
            "attention_format": {"type": "string", "enum": ["dense", "csr"], "default": "dense",
                                 "description": "csr: the attention output becomes attention_indptr INT32 [B*L + 1], attention_indices INT32 [nnz] and attention_values FP32 [n_heads, nnz] (mean: [nnz])"},
            "binary_data_output": {"type": "boolean", "default": False}}},
        "inputs": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["name", "shape", "datatype"], "properties": {
            "name": {"type": "string", "enum": ["embeddings", "lengths"]},
            "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "datatype": {"type": "string", "enum": ["FP32", "INT32"]},
            "parameters": {"type": "object", "properties": {"binary_data_size": {"type": "integer", "minimum": 0}}},
            "data": {"type": "array", "items": {}, "description": "flat row-major or nested as the shape"}}}},
        "outputs": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "enum": ["outputs", "attention"]},
            "parameters": {"type": "object", "properties": {"binary_data": {"type": "boolean"}}}}}}}},
    "V2InferResponse": {"type": "object", "properties": {
        "model_name": {"type": "string"}, "model_version": {"type": "string"},
        "id": {"type": "string"},
        "parameters": {"type": "object", "properties": {
            "attention_scores": {"type": "integer", "description": "query-key scores computed, every head and layer"}}},
        "outputs": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "datatype": {"type": "string"},
            "shape": {"type": "array", "items": {"type": "integer"}},
            "parameters": {"type": "object", "properties": {"binary_data_size": {"type": "integer"}}},
            "data": {"type": "array", "items": {"type": "number"}}}}}}},
})


def v2_model_paths(versioned):
    base = "/v2/models/{name}" + ("/versions/{version}" if versioned else "")
    params = [V2_NAME] + ([V2_VERSION] if versioned else [])
    return {
        base: {"get": {"summary": "Model metadata (Open Inference Protocol)", "parameters": params,
                       "responses": {"200": v2body("V2ModelMetadata", "the model's inputs and outputs"),
                                     "401": v2err("missing or wrong API key"),
                                     "404": v2err("unknown model or version"),
                                     "503": v2err("starting")}}},
        base + "/ready": {"get": {"summary": "Model ready (Open Inference Protocol)", "parameters": params,
                                  "responses": {"200": V2_EMPTY, "401": v2err("missing or wrong API key"),
                                                "404": v2err("unknown model or version"),
                                                "503": v2err("starting or shutting down")}}},
        base + "/infer": {"post": {
            "summary": "Inference (Open Inference Protocol, with Triton's binary tensor data extension)",
            "description": "The body is the JSON inference request, or, with the "
                           "Inference-Header-Content-Length header, that many bytes of JSON followed by "
                           "the binary tensors (little-endian, row-major) in input order. Any "
                           "Content-Type is accepted.",
            "parameters": params + [
                {"name": "Inference-Header-Content-Length", "in": "header", "required": False,
                 "schema": {"type": "integer", "minimum": 0},
                 "description": "bytes of JSON at the start of the body when binary tensors follow"}],
            "requestBody": {"required": True, "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/V2InferRequest"}},
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
            "responses": {
                "200": {"description": "the outputs: JSON, or JSON then binary outputs",
                        "headers": {"Inference-Header-Content-Length": {
                            "schema": {"type": "integer"},
                            "description": "present when binary outputs follow the JSON"}},
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/V2InferResponse"}},
                            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
                "400": v2err("malformed request: JSON, inputs, shapes, data, sizes, parameters, outputs"),
                "401": v2err("missing or wrong API key"),
                "404": v2err("unknown model or version"),
                "405": v2err("not POST"),
                "413": v2err("body over server.max_body_bytes, or batch / sequence / token / attention size over the limits"),
                "415": v2err("a Content-Encoding other than identity"),
                "429": v2err("the compute queue is full; see Retry-After"),
                "503": v2err("starting or shutting down")}}},
    }


PATHS.update({
    "/v2": {"get": {"summary": "Server metadata (Open Inference Protocol)", "responses": {
        "200": v2body("V2ServerMetadata", "name, version, extensions"),
        "401": v2err("missing or wrong API key")}}},
    "/v2/health/live": {"get": {"summary": "Server live (Open Inference Protocol)", "security": [],
                                "responses": {"200": V2_EMPTY}}},
    "/v2/health/ready": {"get": {"summary": "Server ready (Open Inference Protocol)", "security": [],
                                 "responses": {"200": V2_EMPTY,
                                               "503": v2err("starting or shutting down")}}},
})
PATHS.update(v2_model_paths(False))
PATHS.update(v2_model_paths(True))

SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "attnd", "version": VERSION,
             "description": "A transformer encoder served over HTTP: outputs and attention weights. "
                            "Errors are {\"error\": {\"type\", \"message\"}}; under /v2 (the Open "
                            "Inference Protocol) they are {\"error\": \"message\"}."},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                       "description": "Required on every route but /health, /, /v2/health/live and "
                                                      "/v2/health/ready when server.api_key is set."}},
        "schemas": SCHEMAS},
    "security": [{"bearer": []}],
    "paths": PATHS,
}


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "server/protocol/openapi.c"
    lines = json.dumps(SPEC, indent=1).split("\n")
    out = ["/* openapi.c - the OpenAPI 3 description served at /openapi.json.",
           " * Generated by tools/make_openapi.py: edit that and rerun it. */",
           '#include "http/server.h"', "",
           "/* One long literal: fine for GCC and Clang, past ISO C's 4095-byte minimum. */",
           '#pragma GCC diagnostic ignored "-Woverlength-strings"', "",
           "const char openapi_json[] ="]
    for ln in lines:
        out.append('    "' + ln.replace("\\", "\\\\").replace('"', '\\"') + '\\n"')
    out[-1] += ";"
    with open(out_path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
