/*
 * HMAC-SHA256 of audit entry values (src/audit/audit-entry.ts), as Vault writes them:
 * "hmac-sha256:" and the hex digest, keyed by a device's salt.
 *
 * Every string of every audited request and answer is hashed, so this is the audit
 * devices' hot path. Here the key's inner and outer pads are hashed once per device (the
 * state), and each value is read straight from its string into a per-thread buffer, with no
 * JavaScript string or Buffer made on the way and one string made for the result.
 *
 * hmacState(key)         -> Buffer holding the two SHA-256 states after the padded key
 *                            (key: a Buffer of at most 64 bytes)
 * hmacHex(state, value)  -> "hmac-sha256:<hex>" of the UTF-8 bytes of value (a string)
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "addon.h"
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 64
#define PREFIX "hmac-sha256:"
#define PREFIX_LEN 12
#define SCRATCH 16384

typedef struct {
  SHA256_CTX inner;
  SHA256_CTX outer;
} HmacState;

static __thread char scratch[SCRATCH];

/* The call's arguments, and its first as a Buffer's bytes; 0 (with a TypeError thrown) when it is none. */
static int args_with_buffer(napi_env env, napi_callback_info info, napi_value *argv, size_t want, void **data,
                            size_t *len, const char *message) {
  size_t argc = want;
  bool is_buffer = false;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < want || napi_is_buffer(env, argv[0], &is_buffer) != napi_ok || !is_buffer ||
      napi_get_buffer_info(env, argv[0], data, len) != napi_ok) {
    napi_throw_type_error(env, NULL, message);
    return 0;
  }
  return 1;
}

static napi_value HmacStateOf(napi_env env, napi_callback_info info) {
  static const char *const message = "hmacState: key must be a Buffer of at most 64 bytes";
  napi_value argv[1];
  void *key = NULL;
  size_t key_len = 0;
  if (!args_with_buffer(env, info, argv, 1, &key, &key_len, message)) return NULL;
  if (key_len > BLOCK) {
    napi_throw_type_error(env, NULL, message);
    return NULL;
  }
  unsigned char ipad[BLOCK], opad[BLOCK];
  memset(ipad, 0x36, BLOCK);
  memset(opad, 0x5c, BLOCK);
  for (size_t i = 0; i < key_len; i++) {
    ipad[i] ^= ((unsigned char *)key)[i];
    opad[i] ^= ((unsigned char *)key)[i];
  }
  void *data = NULL;
  napi_value out;
  if (napi_create_buffer(env, sizeof(HmacState), &data, &out) != napi_ok) return NULL;
  HmacState *s = data;
  SHA256_Init(&s->inner);
  SHA256_Update(&s->inner, ipad, BLOCK);
  SHA256_Init(&s->outer);
  SHA256_Update(&s->outer, opad, BLOCK);
  return out;
}

static napi_value HmacHex(napi_env env, napi_callback_info info) {
  static const char *const message = "hmacHex: state must come from hmacState";
  napi_value argv[2];
  void *state = NULL;
  size_t state_len = 0;
  if (!args_with_buffer(env, info, argv, 2, &state, &state_len, message)) return NULL;
  if (state_len != sizeof(HmacState)) {
    napi_throw_type_error(env, NULL, message);
    return NULL;
  }
  /* Most values fit the scratch buffer; one that may not is measured and copied whole. */
  char *bytes = scratch;
  size_t len = 0;
  if (napi_get_value_string_utf8(env, argv[1], scratch, SCRATCH, &len) != napi_ok) {
    napi_throw_type_error(env, NULL, "hmacHex: value must be a string");
    return NULL;
  }
  if (len + 4 >= SCRATCH) {
    if (napi_get_value_string_utf8(env, argv[1], NULL, 0, &len) != napi_ok) return NULL;
    bytes = malloc(len + 1);
    if (bytes == NULL) {
      napi_throw_error(env, NULL, "hmacHex: out of memory");
      return NULL;
    }
    napi_get_value_string_utf8(env, argv[1], bytes, len + 1, &len);
  }
  const HmacState *s = state;
  SHA256_CTX ctx = s->inner;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_Update(&ctx, bytes, len);
  SHA256_Final(digest, &ctx);
  if (bytes != scratch) free(bytes);
  ctx = s->outer;
  SHA256_Update(&ctx, digest, sizeof digest);
  SHA256_Final(digest, &ctx);

  static const char hex[] = "0123456789abcdef";
  char text[PREFIX_LEN + 2 * SHA256_DIGEST_LENGTH];
  memcpy(text, PREFIX, PREFIX_LEN);
  for (size_t i = 0; i < SHA256_DIGEST_LENGTH; i++) {
    text[PREFIX_LEN + 2 * i] = hex[digest[i] >> 4];
    text[PREFIX_LEN + 2 * i + 1] = hex[digest[i] & 15];
  }
  napi_value out;
  if (napi_create_string_latin1(env, text, sizeof text, &out) != napi_ok) return NULL;
  return out;
}

void audit_hmac_export(napi_env env, napi_value exports) {
  napi_value hmac;
  napi_create_object(env, &hmac);
  export_function(env, hmac, "hmacState", HmacStateOf);
  export_function(env, hmac, "hmacHex", HmacHex);
  napi_set_named_property(env, exports, "auditHmac", hmac);
}
