/* v2_util.c - the Open Inference Protocol suites' shared input and their
 * table of malformed requests (v2_util.h). */
#include "v2_util.h"

#include <math.h>
#include <stdio.h>

const float X8[8] = {0.5f, -1.0f, 0.25f, 2.0f, 1.5f, 0.0f, -0.5f, 1.0f};

const bad_case bad_cases[] = {
    /* the JSON header */
    {"{\"inputs\": [", NULL, 0, 0, -1, 400, "invalid JSON at line 1"},
    {"[1]", NULL, 0, 0, -1, 400, "must be a JSON object, not an array"},
    {"{\"inputz\":[]}", NULL, 0, 0, -1, 400, "unknown field 'inputz'"},
    {"{\"inputs\":[" EMB_JSON "],\"inputs\":[]}", NULL, 0, 0, -1, 400, "duplicate object key"},
    {"{}", NULL, 0, 0, -1, 400, "inputs must be a non-empty array"},
    {"{\"inputs\":[]}", NULL, 0, 0, -1, 400, "inputs must be a non-empty array"},
    {"{\"id\":5,\"inputs\":[" EMB_JSON "]}", NULL, 0, 0, -1, 400, "id must be a string"},
    {"{\"model_name\":\"other\",\"inputs\":[" EMB_JSON "]}", NULL, 0, 0, -1, 400,
     "model_name is 'other' but the URL names model 'encoder'"},
    /* inputs */
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[2]") ",{\"name\":\"tokens\",\"datatype\":"
                                                      "\"INT32\",\"shape\":[1],\"data\":[1]}"),
     NULL, 0, 0, -1, 400, "inputs[2]: unknown input 'tokens'"},
    {INFER(EMB_JSON "," EMB_JSON), NULL, 0, 0, -1, 400,
     "inputs[1]: input 'embeddings' is given twice"},
    {INFER(LEN_IN("INT32", "[1]", "[1]")), NULL, 0, 0, -1, 400, "input 'embeddings' is required"},
    {INFER("3"), NULL, 0, 0, -1, 400, "inputs[0] is a number; expected an object"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],\"data\":" X8_JSON
           ",\"contents\":{}}"),
     NULL, 0, 0, -1, 400, "inputs[0]: unknown field 'contents'"},
    {INFER("{\"datatype\":\"FP32\",\"shape\":[1,2,4],\"data\":" X8_JSON "}"), NULL, 0, 0, -1, 400,
     "inputs[0] has no name"},
    {INFER(EMB_IN("FP64", "[1,2,4]", X8_JSON)), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings): datatype is 'FP64'; the model takes FP32"},
    {INFER(EMB_JSON "," LEN_IN("INT64", "[1]", "[2]")), NULL, 0, 0, -1, 400,
     "inputs[1] (lengths): datatype is 'INT64'; the model takes INT32"},
    {INFER("{\"name\":\"embeddings\",\"shape\":[1,2,4],\"data\":" X8_JSON "}"), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings) has no datatype"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"data\":" X8_JSON "}"), NULL, 0, 0, -1,
     400, "inputs[0] (embeddings) has no shape"},
    {INFER(EMB_IN("FP32", "[2,4]", X8_JSON)), NULL, 0, 0, -1, 400,
     "shape [2, 4] has 2 dimensions; expected [B, L, 4]"},
    {INFER(EMB_IN("FP32", "[1,2,5]", "[1,2,3,4,5,6,7,8,9,10]")), NULL, 0, 0, -1, 400,
     "shape[2] = 5 but d_model is 4"},
    {INFER(EMB_IN("FP32", "[-1,2,4]", X8_JSON)), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings): shape[0] is negative"},
    {INFER(EMB_IN("FP32", "[1,\"2\",4]", X8_JSON)), NULL, 0, 0, -1, 400,
     "shape[1] is a string; expected a non-negative integer"},
    {INFER(EMB_IN("FP32", "[0,2,4]", "[]")), NULL, 0, 0, -1, 400,
     "shape [0, 2, 4] is empty; B and L must be at least 1"},
    /* shape and data that disagree */
    {INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,1.5,0,-0.5]")), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings): data has 7 entries; shape [1, 2, 4] has 8"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[[[1,2,3,4],[5,6,7]]]")), NULL, 0, 0, -1, 400,
     "data[0][1] has 3 entries; shape [1, 2, 4] says 4"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[[1,2,3,4,5,6,7,8]]")), NULL, 0, 0, -1, 400,
     "data[0] has 8 entries; shape [1, 2, 4] says 2"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[[[1,2,3,4],5]]")), NULL, 0, 0, -1, 400,
     "data[0][1] is a number; shape [1, 2, 4] needs an array of 4 here"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "{\"x\":1}")), NULL, 0, 0, -1, 400, "data must be an array"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,\"2\",1.5,0,-0.5,1]")), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings): data[3] is a string, not a number"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[[[0.5,-1,0.25,2],[1.5,true,-0.5,1]]]")), NULL, 0, 0, -1, 400,
     "data[0][1][1] is a boolean, not a number"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,1e39,0,-0.5,1]")), NULL, 0, 0, -1, 400,
     "data[4] = 1e+39 is outside the float32 range"},
    /* lengths */
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[3]")), NULL, 0, 0, -1, 400,
     "inputs[1] (lengths): lengths[0] = 3 is outside 1..2"},
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[0]")), NULL, 0, 0, -1, 400,
     "lengths[0] = 0 is outside 1..2"},
    {INFER(EMB_JSON "," LEN_IN("INT32", "[2]", "[2,2]")), NULL, 0, 0, -1, 400,
     "inputs[1] (lengths): shape [2]; expected [1]"},
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[1.5]")), NULL, 0, 0, -1, 400,
     "data[0] is a number with a fraction, not an integer"},
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[4294967298]")), NULL, 0, 0, -1, 400,
     "data[0] = 4294967298 is outside the INT32 range"},
    /* data and binary_data_size */
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],\"data\":" X8_JSON
           ",\"parameters\":{\"binary_data_size\":32}}"),
     "", 8, 0, -1, 400, "has both data and parameters.binary_data_size"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4]}"), NULL, 0, 0, -1,
     400, "inputs[0] (embeddings) has no data"},
    {INFER(EMB_BIN), NULL, 0, 0, -1, 400,
     "has parameters.binary_data_size but the request has no Inference-Header-Content-Length"},
    {INFER(EMB_BIN), NULL, 8, 0, -1, 400, "needs an Inference-Header-Content-Length header"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
           "\"parameters\":{\"binary_data_size\":\"32\"}}"),
     "", 8, 0, -1, 400, "parameters.binary_data_size must be an integer, not a string"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
           "\"parameters\":{\"binary_data_size\":32,\"shared_memory_region\":\"r\"}}"),
     "", 8, 0, -1, 400,
     "inputs[0] (embeddings): parameters: unknown parameter "
     "'shared_memory_region'"},
    /* sizes that lie */
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
           "\"parameters\":{\"binary_data_size\":28}}"),
     "", 7, 0, -1, 400, "binary_data_size is 28 but shape [1, 2, 4] of FP32 needs 32 bytes"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
           "\"parameters\":{\"binary_data_size\":36}}"),
     "", 9, 0, -1, 400, "binary_data_size is 36 but shape [1, 2, 4] of FP32 needs 32 bytes"},
    {INFER(EMB_BIN), "", 7, 0, -1, 400,
     "binary_data_size 32 runs past the end of the body: only 28 bytes follow"},
    {INFER(EMB_BIN), "", 8, 3, -1, 400,
     "3 bytes after the 105-byte JSON header are claimed by no input's binary_data_size"},
    {INFER(EMB_JSON), "", 0, 1, -1, 400, "1 byte after the"},
    {INFER(EMB_BIN "," LEN_IN("INT32", "[1]", "[2]")), "", 8, 4, -1, 400, "4 bytes after the"},
    {INFER(EMB_BIN ",{\"name\":\"lengths\",\"datatype\":\"INT32\",\"shape\":[1],"
                   "\"parameters\":{\"binary_data_size\":4}}"),
     "", 8, 0, -1, 400,
     "inputs[1] (lengths): binary_data_size 4 runs past the end of the body: only 0 bytes "
     "follow the 191-byte JSON header and the inputs before it"},
    /* the header length */
    {INFER(EMB_BIN), "100000", 8, 0, -1, 400,
     "Inference-Header-Content-Length 100000 is past the end of the body (137 bytes)"},
    {INFER(EMB_BIN), "12x", 8, 0, -1, 400,
     "Inference-Header-Content-Length '12x' is not a byte count"},
    {INFER(EMB_BIN), "-5", 8, 0, -1, 400,
     "Inference-Header-Content-Length '-5' is not a byte count"},
    {INFER(EMB_BIN), "20", 8, 0, -1, 400,
     "invalid JSON header (the first Inference-Header-Content-Length bytes)"},
    /* binary values */
    {INFER(EMB_BIN), "", 8, 0, 5, 400,
     "inputs[0] (embeddings): binary element 5 ([0][1][1]) is NaN"},
    /* request parameters */
    {WITH_PARAMS("\"causul\":true"), NULL, 0, 0, -1, 400,
     "parameters: unknown parameter 'causul'; expected attention, causal"},
    {WITH_PARAMS("\"attention\":\"max\""), NULL, 0, 0, -1, 400,
     "parameters.attention must be \"heads\", \"mean\" or \"none\", not 'max'"},
    {WITH_PARAMS("\"causal\":\"yes\""), NULL, 0, 0, -1, 400,
     "parameters.causal must be true or false, not a string"},
    {WITH_PARAMS("\"window\":-1"), NULL, 0, 0, -1, 400,
     "parameters.window = -1 must not be negative"},
    {WITH_PARAMS("\"window_right\":-2"), NULL, 0, 0, -1, 400,
     "parameters.window_right = -2 must not be negative"},
    {WITH_PARAMS("\"window\":1,\"window_left\":1"), NULL, 0, 0, -1, 400,
     "give window, or window_left and window_right, not both"},
    {WITH_PARAMS("\"global\":\"[0,\""), NULL, 0, 0, -1, 400,
     "parameters.global: the string '[0,' is not valid JSON"},
    /* integers of any size are numbers (JavaScript writes 1e20 so), also in
     * a string holding JSON: the parameter names itself */
    {WITH_PARAMS("\"global\":\"[100000000000000000000]\""), NULL, 0, 0, -1, 400,
     "parameters.global[0] is a number; expected a position 0..1"},
    {WITH_PARAMS("\"window\":100000000000000000000"), NULL, 0, 0, -1, 400,
     "parameters.window must be a non-negative integer or {\"left\": int, \"right\": int}, "
     "not a number"},
    {WITH_PARAMS("\"global\":[5]"), NULL, 0, 0, -1, 400,
     "parameters.global[0] = 5 is outside 0..1"},
    {WITH_PARAMS("\"key_padding\":[[false]]"), NULL, 0, 0, -1, 400,
     "parameters.key_padding[0] has 1 entry; L is 2"},
    {WITH_PARAMS("\"attn\":[[true,1],[0,0]]"), NULL, 0, 0, -1, 400,
     "parameters.attn mixes booleans and numbers"},
    {WITH_PARAMS("\"binary_data_output\":1"), NULL, 0, 0, -1, 400,
     "parameters.binary_data_output must be true or false"},
    {"{\"inputs\":[" EMB_JSON "],\"parameters\":[]}", NULL, 0, 0, -1, 400,
     "parameters must be an object, not an array"},
    /* requested outputs */
    {WITH_OUTPUTS("{\"name\":\"logits\"}"), NULL, 0, 0, -1, 400,
     "outputs[0]: unknown output 'logits'; the model gives outputs and attention"},
    {WITH_OUTPUTS("{\"name\":\"outputs\"},{\"name\":\"outputs\"}"), NULL, 0, 0, -1, 400,
     "outputs[1]: output 'outputs' is asked for twice"},
    {"{\"inputs\":[" EMB_JSON "],\"parameters\":{\"attention\":\"none\"},"
     "\"outputs\":[{\"name\":\"attention\"}]}",
     NULL, 0, 0, -1, 400, "outputs[0] asks for attention but parameters.attention is \"none\""},
    {WITH_OUTPUTS("{\"name\":\"outputs\",\"parameters\":{\"classification\":2}}"), NULL, 0, 0, -1,
     400, "outputs[0] (outputs): parameters: unknown parameter 'classification'"},
    {WITH_OUTPUTS("{\"name\":\"outputs\",\"parameters\":{\"binary_data\":\"true\"}}"), NULL, 0, 0,
     -1, 400, "parameters.binary_data must be true or false, not a string"},
    {WITH_OUTPUTS("{\"nam\":\"outputs\"}"), NULL, 0, 0, -1, 400, "outputs[0]: unknown field 'nam'"},
    {"{\"inputs\":[" EMB_JSON "],\"outputs\":{}}", NULL, 0, 0, -1, 400, "outputs must be an array"},
};
const int N_BAD = (int)(sizeof bad_cases / sizeof *bad_cases);

const char *bad_body(const bad_case *c, bytes *b, char hl[32])
{
    b->len = 0;
    put_str(b, c->json);
    for (int i = 0; i < c->floats; i++)
        put_f32(b, i == c->nan_at ? NAN : X8[i % 8]);
    for (int i = 0; i < c->extra; i++)
        put(b, "\xab", 1);
    if (!c->header)
        return NULL;
    if (c->header[0])
        snprintf(hl, 32, "%s", c->header);
    else
        snprintf(hl, 32, "%zu", strlen(c->json));
    return hl;
}
