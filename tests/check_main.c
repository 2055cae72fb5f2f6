/* check_main.c - runs every suite; exits non-zero if any test fails.
 * CK_RUN_SUITE / CK_RUN_CASE select a part, as Check documents. */
#include "encoder.h"
#include "suites.h"
#include "torch_fixture.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    enc_set_threads(2);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* Counts that grow with the fixtures are said here, not in prose. */
    printf("PyTorch fixtures: %d cases under tests/fixtures/torch\n", torch_case_count());
    fflush(stdout);
    SRunner *sr = srunner_create(sha256_suite());
    srunner_add_suite(sr, safetensors_suite());
    srunner_add_suite(sr, hparams_suite());
    srunner_add_suite(sr, model_suite());
    srunner_add_suite(sr, attention_suite());
    srunner_add_suite(sr, blockmask_suite());
    srunner_add_suite(sr, naive_suite());
    srunner_add_suite(sr, gemm_suite());
    srunner_add_suite(sr, dtype_suite());
    srunner_add_suite(sr, torch_suite());
    srunner_add_suite(sr, config_suite());
    srunner_add_suite(sr, v1_fixtures_suite());
    srunner_add_suite(sr, v1_requests_suite());
    srunner_add_suite(sr, v1_embeddings_suite());
    srunner_add_suite(sr, http_suite());
    srunner_add_suite(sr, page_suite());
    srunner_add_suite(sr, fuzz_suite());
    srunner_add_suite(sr, edges_suite());
    srunner_add_suite(sr, hostile_suite());
    srunner_add_suite(sr, jsontext_suite());
    srunner_add_suite(sr, extract_suite());
    srunner_add_suite(sr, team_suite());
    srunner_add_suite(sr, v2_suite());
    srunner_add_suite(sr, checkpoint_suite());
    srunner_add_suite(sr, modernbert_suite());
    srunner_add_suite(sr, embed_suite());
    srunner_add_suite(sr, tokenizer_suite());
    srunner_add_suite(sr, text_suite());
    srunner_add_suite(sr, pooling_suite());
    srunner_add_suite(sr, csr_suite());
    srunner_add_suite(sr, spin_suite());
    srunner_add_suite(sr, framing_suite());
    srunner_add_suite(sr, stream_suite());
    srunner_add_suite(sr, bufpool_suite());
    srunner_add_suite(sr, base64_suite());
    srunner_add_suite(sr, jsonnum_suite());
    srunner_add_suite(sr, runtime_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
