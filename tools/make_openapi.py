#!/usr/bin/python3
"""Writes server/openapi.c: the OpenAPI 3 description attnd serves at
/openapi.json, kept here as Python data so it is easy to read and edit.

Usage: /usr/bin/python3 tools/make_openapi.py server/openapi.c
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
                "unsupported_media_type", "queue_full", "internal", "unavailable"]},
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
                 "description": "bool or number, [L][L] or [B][L][L]; true = not allowed, numbers are added to the scaled scores"}}},
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
        "encoding": {"type": "string", "enum": ["json", "base64"], "default": "json"}}},
    "Usage": {"type": "object", "properties": {
        "sequences": {"type": "integer"}, "tokens": {"type": "integer"},
        "queue_ms": {"type": "number"}, "compute_ms": {"type": "number"}}},
    "EncodeResponse": {"type": "object", "required": ["model", "shape", "outputs", "usage"], "properties": {
        "model": {"type": "string"},
        "shape": {"type": "array", "items": {"type": "integer"}},
        "outputs": {"description": "numbers with the input's nesting (ragged with lengths), or base64 string(s) with encoding base64"},
        "attention": {"description": "the last layer's weights: [B][n_heads][L][L] (heads) or [B][L][L] (mean); absent with attention none"},
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
}

SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "attnd", "version": VERSION,
             "description": "A transformer encoder served over HTTP: outputs and attention weights. "
                            "Errors are {\"error\": {\"type\", \"message\"}}."},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                       "description": "Required on every route but /health when server.api_key is set."}},
        "schemas": SCHEMAS},
    "security": [{"bearer": []}],
    "paths": PATHS,
}


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "server/openapi.c"
    lines = json.dumps(SPEC, indent=1).split("\n")
    out = ["/* openapi.c - the OpenAPI 3 description served at /openapi.json.",
           " * Generated by tools/make_openapi.py: edit that and rerun it. */",
           '#include "server.h"', "",
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
