/* Loads an installed llama-cpp-python wheel's libraries the way the package does
 * at import, then generates greedily through the C API. The Windows wheel's DLLs
 * run so under wine, where no Windows CPython is at hand; the Linux wheel's
 * libraries run so natively, as the reference.
 *
 * The loading, as llama_cpp 0.3.36 does it (llama_cpp/_ctypes_extensions.py, and
 * the import-time backend loading llama-forge adds to llama_cpp/llama_cpp.py):
 *   - Windows: the lib dir is put first on PATH (its DLLs import each other by
 *     name), then `llama.dll`, else `libllama.dll`, is loaded by its full path;
 *     Linux: `libllama.so` by its full path (RUNPATH $ORIGIN finds the rest);
 *   - then ggml the same way, and ggml_backend_load_all_from_path(lib dir) loads
 *     the best CPU variant; no backend loaded is a failure.
 * The generation, as tests/e2e/smoke_llama_cpp_python.py does it: the prompt with
 * BOS, a sampler chain [logit_bias(every end-of-generation token -> -inf), greedy],
 * n_ctx 128, one thread.
 *
 * usage: llama_harness LIB_DIR MODEL.gguf N_TOKENS
 * prints BACKENDS: <count> and TOKENS: <id> ...; exits 1 on any failure. */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

#ifdef _WIN32
#include <windows.h>
typedef HMODULE lib_t;
static const char *const NAMES[] = {"%s\\%s.dll", "%s\\lib%s.dll"};
static lib_t open_file(const char *path) { return LoadLibraryA(path); }
static void *symbol(lib_t lib, const char *name) { return (void *) GetProcAddress(lib, name); }
static int exists(const char *path) { return GetFileAttributesA(path) != INVALID_FILE_ATTRIBUTES; }
static void put_first_on_path(const char *dir) {
    char old[32768] = "";
    GetEnvironmentVariableA("PATH", old, sizeof old);
    size_t n = strlen(dir) + 1 + strlen(old) + 1;
    char *path = malloc(n);
    snprintf(path, n, "%s;%s", dir, old);
    SetEnvironmentVariableA("PATH", path);
    free(path);
}
#else
#include <dlfcn.h>
#include <unistd.h>
typedef void *lib_t;
static const char *const NAMES[] = {"%s/lib%s.so", "%s/lib%s.so"};
static lib_t open_file(const char *path) { return dlopen(path, RTLD_NOW | RTLD_GLOBAL); }
static void *symbol(lib_t lib, const char *name) { return dlsym(lib, name); }
static int exists(const char *path) { return access(path, F_OK) == 0; }
static void put_first_on_path(const char *dir) { (void) dir; }
#endif

static void fail(const char *what) {
    fprintf(stderr, "llama_harness: %s\n", what);
    exit(1);
}

/* The library `base` in `dir`, by the first name that exists, as llama_cpp looks. */
static lib_t open_lib(const char *dir, const char *base) {
    char path[4096];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, NAMES[i], dir, base);
        if (exists(path)) {
            lib_t lib = open_file(path);
            if (!lib) {
                fprintf(stderr, "llama_harness: cannot load %s\n", path);
                exit(1);
            }
            return lib;
        }
    }
    fprintf(stderr, "llama_harness: no %s library in %s\n", base, dir);
    exit(1);
}

/* `p_name`: the function `name` of `lib`, typed as the header declares it. */
#define BIND(lib, name)                                      \
    __typeof__(&name) p_##name = (__typeof__(&name)) symbol(lib, #name); \
    if (!p_##name) fail("missing symbol " #name)

int main(int argc, char **argv) {
    if (argc != 4) fail("usage: llama_harness LIB_DIR MODEL.gguf N_TOKENS");
    const char *dir = argv[1], *model_path = argv[2];
    int n_tokens = atoi(argv[3]);

    put_first_on_path(dir);
    lib_t llama = open_lib(dir, "llama");
    lib_t ggml = open_lib(dir, "ggml");

    BIND(ggml, ggml_backend_load_all_from_path);
    BIND(ggml, ggml_backend_reg_count);
    p_ggml_backend_load_all_from_path(dir);
    size_t backends = p_ggml_backend_reg_count();
    printf("BACKENDS: %zu\n", backends);
    if (backends == 0) fail("no ggml backend loaded from the lib dir");

    BIND(llama, llama_backend_init);
    BIND(llama, llama_model_default_params);
    BIND(llama, llama_context_default_params);
    BIND(llama, llama_model_load_from_file);
    BIND(llama, llama_init_from_model);
    BIND(llama, llama_model_get_vocab);
    BIND(llama, llama_vocab_n_tokens);
    BIND(llama, llama_vocab_is_eog);
    BIND(llama, llama_tokenize);
    BIND(llama, llama_batch_get_one);
    BIND(llama, llama_decode);
    BIND(llama, llama_sampler_chain_default_params);
    BIND(llama, llama_sampler_chain_init);
    BIND(llama, llama_sampler_chain_add);
    BIND(llama, llama_sampler_init_logit_bias);
    BIND(llama, llama_sampler_init_greedy);
    BIND(llama, llama_sampler_sample);

    p_llama_backend_init();
    struct llama_model_params mp = p_llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = p_llama_model_load_from_file(model_path, mp);
    if (!model) fail("cannot load the model");
    struct llama_context_params cp = p_llama_context_default_params();
    cp.n_ctx = 128;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    struct llama_context *ctx = p_llama_init_from_model(model, cp);
    if (!ctx) fail("cannot make a context");

    const struct llama_vocab *vocab = p_llama_model_get_vocab(model);
    const char *prompt = "The quick brown fox jumps over the lazy dog. Once upon a time";
    llama_token prompt_tokens[128];
    int n_prompt = p_llama_tokenize(vocab, prompt, (int32_t) strlen(prompt), prompt_tokens, 128, true, false);
    if (n_prompt <= 0 || n_prompt + n_tokens > 128) fail("the prompt does not fit");

    int n_vocab = p_llama_vocab_n_tokens(vocab);
    llama_logit_bias *biases = calloc((size_t) n_vocab, sizeof *biases);
    int n_eog = 0;
    for (llama_token t = 0; t < n_vocab; t++) {
        if (p_llama_vocab_is_eog(vocab, t)) {
            biases[n_eog].token = t;
            biases[n_eog].bias = -INFINITY;
            n_eog++;
        }
    }
    struct llama_sampler *chain = p_llama_sampler_chain_init(p_llama_sampler_chain_default_params());
    if (n_eog > 0) p_llama_sampler_chain_add(chain, p_llama_sampler_init_logit_bias(n_vocab, n_eog, biases));
    p_llama_sampler_chain_add(chain, p_llama_sampler_init_greedy());

    if (p_llama_decode(ctx, p_llama_batch_get_one(prompt_tokens, n_prompt)) != 0) fail("the prompt did not decode");
    printf("TOKENS:");
    for (int i = 0; i < n_tokens; i++) {
        llama_token tok = p_llama_sampler_sample(chain, ctx, -1);
        printf(" %d", tok);
        if (i + 1 < n_tokens && p_llama_decode(ctx, p_llama_batch_get_one(&tok, 1)) != 0) fail("a token did not decode");
    }
    printf("\n");
    fflush(stdout);
    return 0;
}
