/*
 * ECDSA for the certificate hot paths: checking CSR self-signatures and signing
 * certificates with an EC issuer key.
 *
 * node:crypto imports every public key through OpenSSL 3's EVP layer: about 45 us for a
 * P-256 key (a new EC_GROUP and a full key check per import) and a further ~10 us when the
 * key is first used, before the ~40-100 us of the verification itself. This addon decodes
 * the point against a group built once per curve, checks that it is on the curve (the
 * curves here have cofactor 1, so that is the whole public-key validation), and verifies
 * with OpenSSL's own ECDSA code, linked from the running Node.js binary.
 *
 * An issuer's EC key is loaded once into a signer handle. A signature is then made on the
 * libuv threadpool, alone or right after a CSR check in the same job: one trip to the
 * threadpool per certificate instead of two, and no signature at all when the check fails.
 *
 * verify(curve, hash, point, data, signature)      -> 1 valid, 0 invalid, -1 unusable public key
 * verifyAsync(...)                                 -> the same number, through a Promise
 * signer(curve, privateScalar)                     -> an opaque handle (throws on a bad key)
 * sign(signer, hash, data)                         -> DER Ecdsa-Sig-Value (Buffer)
 * signAsync(signer, hash, data)                    -> Promise of the same
 * verifyThenSignAsync(curve, hash, point, data, signature, signer, signHash, toSign)
 *                                                  -> Promise of the signature (Buffer) when the
 *                                                     check passes, else of its number (0, -1, -2)
 * generateKeysAsync(curve, count)                  -> Promise of `count` new key pairs, each the
 *                                                     private scalar (curve size, big-endian) then
 *                                                     the uncompressed public point, back to back
 * curve: 0 P-256, 1 P-384, 2 P-521; hash: 0 SHA-1, 1 SHA-256, 2 SHA-384, 3 SHA-512.
 * Signatures are DER Ecdsa-Sig-Value, checked strictly as OpenSSL does. -2 means an
 * internal failure: the caller falls back to node:crypto.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "addon.h"
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CURVES 3
#define HASHES 4
#define RESULT_ERROR -2
#define MAX_SIGNATURE 160 /* DER ECDSA-Sig-Value on P-521 is at most 139 bytes */

static const int CURVE_NIDS[CURVES] = {NID_X9_62_prime256v1, NID_secp384r1, NID_secp521r1};
/* Built once at load, only read afterwards. */
static EC_GROUP *groups[CURVES];
/* One verification key per curve and thread; its public point is replaced per call. */
static __thread EC_KEY *thread_keys[CURVES];

static size_t digest(int hash, const unsigned char *data, size_t len, unsigned char *out) {
  switch (hash) {
    case 0: SHA1(data, len, out); return 20;
    case 1: SHA256(data, len, out); return 32;
    case 2: SHA384(data, len, out); return 48;
    case 3: SHA512(data, len, out); return 64;
    default: return 0;
  }
}

static int ecdsa_verify(int curve, int hash, const unsigned char *point, size_t point_len,
                        const unsigned char *data, size_t data_len, const unsigned char *sig, size_t sig_len) {
  const EC_GROUP *group = groups[curve];
  EC_KEY *key = thread_keys[curve];
  if (key == NULL) {
    key = EC_KEY_new();
    if (key == NULL || EC_KEY_set_group(key, group) != 1) {
      EC_KEY_free(key);
      ERR_clear_error();
      return RESULT_ERROR;
    }
    thread_keys[curve] = key;
  }
  EC_POINT *p = EC_POINT_new(group);
  if (p == NULL) {
    ERR_clear_error();
    return RESULT_ERROR;
  }
  int result;
  if (EC_POINT_oct2point(group, p, point, point_len, NULL) != 1 || EC_POINT_is_at_infinity(group, p) ||
      EC_POINT_is_on_curve(group, p, NULL) != 1) {
    result = -1;
  } else if (EC_KEY_set_public_key(key, p) != 1) {
    result = RESULT_ERROR;
  } else {
    unsigned char md[64];
    size_t md_len = digest(hash, data, data_len, md);
    result = md_len > 0 && sig_len <= 0x7fffffff && ECDSA_verify(0, md, (int)md_len, sig, (int)sig_len, key) == 1
                 ? 1
                 : 0;
  }
  EC_POINT_free(p);
  /* Failed decodes leave entries on this thread's error queue, which Node.js shares. */
  ERR_clear_error();
  return result;
}

/* Signs with a loaded key; the key is only read, so threads may share it. Returns the length, 0 on failure. */
static size_t ecdsa_sign(EC_KEY *key, int hash, const unsigned char *data, size_t data_len, unsigned char *out) {
  unsigned char md[64];
  size_t md_len = digest(hash, data, data_len, md);
  unsigned int len = 0;
  int ok = md_len > 0 && (size_t)ECDSA_size(key) <= MAX_SIGNATURE &&
           ECDSA_sign(0, md, (int)md_len, out, &len, key) == 1;
  ERR_clear_error();
  return ok ? len : 0;
}

/* ------------------------------------------------------------------ arguments */

static int read_buffer(napi_env env, napi_value v, const unsigned char **out, size_t *len) {
  bool is_buffer = false;
  if (napi_is_buffer(env, v, &is_buffer) != napi_ok || !is_buffer) return 0;
  void *p;
  if (napi_get_buffer_info(env, v, &p, len) != napi_ok) return 0;
  *out = p;
  return 1;
}

static int read_index(napi_env env, napi_value v, int limit, int *out) {
  int32_t n;
  if (napi_get_value_int32(env, v, &n) != napi_ok || n < 0 || n >= limit) return 0;
  *out = n;
  return 1;
}

static void signer_finalize(napi_env env, void *data, void *hint) {
  EC_KEY_free((EC_KEY *)data);
}

static int read_signer(napi_env env, napi_value v, EC_KEY **out) {
  napi_valuetype t;
  void *p = NULL;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_external || napi_get_value_external(env, v, &p) != napi_ok ||
      p == NULL)
    return 0;
  *out = p;
  return 1;
}

typedef struct {
  int curve, hash;
  const unsigned char *point, *data, *sig;
  size_t point_len, data_len, sig_len;
} VerifyArgs;

static int read_verify_args(napi_env env, napi_value *argv, VerifyArgs *a) {
  return read_index(env, argv[0], CURVES, &a->curve) && read_index(env, argv[1], HASHES, &a->hash) &&
         read_buffer(env, argv[2], &a->point, &a->point_len) && read_buffer(env, argv[3], &a->data, &a->data_len) &&
         read_buffer(env, argv[4], &a->sig, &a->sig_len);
}

static int get_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  return napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc == want;
}

#define BAD_ARGS(msg)                            \
  do {                                           \
    napi_throw_type_error(env, NULL, msg);       \
    return NULL;                                 \
  } while (0)

/* ------------------------------------------------------------------ synchronous calls */

static napi_value Verify(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  VerifyArgs a;
  if (!get_args(env, info, 5, argv) || !read_verify_args(env, argv, &a))
    BAD_ARGS("expected (curve, hash, point, data, signature)");
  int r = ecdsa_verify(a.curve, a.hash, a.point, a.point_len, a.data, a.data_len, a.sig, a.sig_len);
  napi_value out;
  napi_create_int32(env, r, &out);
  return out;
}

static napi_value Signer(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int curve;
  const unsigned char *d;
  size_t d_len;
  if (!get_args(env, info, 2, argv) || !read_index(env, argv[0], CURVES, &curve) ||
      !read_buffer(env, argv[1], &d, &d_len))
    BAD_ARGS("expected (curve, privateScalar)");
  const EC_GROUP *group = groups[curve];
  EC_KEY *key = EC_KEY_new();
  BIGNUM *priv = BN_bin2bn(d, (int)d_len, NULL);
  EC_POINT *pub = EC_POINT_new(group);
  int ok = key != NULL && priv != NULL && pub != NULL && EC_KEY_set_group(key, group) == 1 &&
           EC_KEY_set_private_key(key, priv) == 1 && EC_POINT_mul(group, pub, priv, NULL, NULL, NULL) == 1 &&
           EC_KEY_set_public_key(key, pub) == 1 && EC_KEY_check_key(key) == 1;
  BN_clear_free(priv);
  EC_POINT_free(pub);
  ERR_clear_error();
  napi_value out;
  if (!ok || napi_create_external(env, key, signer_finalize, NULL, &out) != napi_ok) {
    EC_KEY_free(key);
    napi_throw_error(env, NULL, "not a usable private key for this curve");
    return NULL;
  }
  return out;
}

typedef struct {
  EC_KEY *key;
  int hash;
  const unsigned char *data;
  size_t data_len;
} SignArgs;

/* (signer, hash, data) at argv[0..2]. */
static int read_sign_args(napi_env env, napi_value *argv, SignArgs *a) {
  return read_signer(env, argv[0], &a->key) && read_index(env, argv[1], HASHES, &a->hash) &&
         read_buffer(env, argv[2], &a->data, &a->data_len);
}

static napi_value Sign(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  SignArgs a;
  if (!get_args(env, info, 3, argv) || !read_sign_args(env, argv, &a)) BAD_ARGS("expected (signer, hash, data)");
  EC_KEY *key = a.key;
  int hash = a.hash;
  const unsigned char *data = a.data;
  size_t data_len = a.data_len;
  unsigned char sig[MAX_SIGNATURE];
  size_t len = ecdsa_sign(key, hash, data, data_len, sig);
  if (len == 0) {
    napi_throw_error(env, NULL, "signing failed");
    return NULL;
  }
  napi_value out;
  napi_create_buffer_copy(env, len, sig, NULL, &out);
  return out;
}

/* ------------------------------------------------------------------ threadpool jobs */

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  int verify; /* whether a check comes first */
  VerifyArgs check;
  EC_KEY *signer; /* NULL: check only */
  int sign_hash;
  const unsigned char *to_sign;
  size_t to_sign_len;
  int verdict;
  unsigned char sig[MAX_SIGNATURE];
  size_t sig_len;
  unsigned char bytes[]; /* copies of every input buffer */
} Job;

static void execute(napi_env env, void *p) {
  Job *job = p;
  job->verdict = 1;
  if (job->verify) {
    VerifyArgs *a = &job->check;
    job->verdict = ecdsa_verify(a->curve, a->hash, a->point, a->point_len, a->data, a->data_len, a->sig, a->sig_len);
  }
  if (job->signer != NULL && job->verdict == 1) {
    job->sig_len = ecdsa_sign(job->signer, job->sign_hash, job->to_sign, job->to_sign_len, job->sig);
    if (job->sig_len == 0) job->verdict = RESULT_ERROR;
  }
}

static void complete(napi_env env, napi_status status, void *p) {
  Job *job = p;
  napi_value out;
  int verdict = status == napi_ok ? job->verdict : RESULT_ERROR;
  if (verdict == 1 && job->signer != NULL) napi_create_buffer_copy(env, job->sig_len, job->sig, NULL, &out);
  else napi_create_int32(env, verdict, &out);
  napi_resolve_deferred(env, job->deferred, out);
  napi_delete_async_work(env, job->work);
  if (job->signer != NULL) EC_KEY_free(job->signer);
  free(job);
}

/*
 * Makes a job's promise and queues the job on the threadpool. NULL, with a JavaScript error
 * thrown, when that fails: the job never runs and the caller frees it.
 */
static napi_value start_job(napi_env env, const char *resource, napi_async_execute_callback execute,
                            napi_async_complete_callback complete, void *job, napi_deferred *deferred,
                            napi_async_work *work) {
  napi_value promise, name;
  if (napi_create_promise(env, deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, resource, NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, execute, complete, job, work) != napi_ok ||
      napi_queue_async_work(env, *work) != napi_ok) {
    napi_throw_error(env, NULL, "could not queue the job");
    return NULL;
  }
  return promise;
}

/* Copies the inputs (the caller may reuse its buffers at once), takes a reference on the signer, queues the job. */
static napi_value queue(napi_env env, const VerifyArgs *check, EC_KEY *signer, int sign_hash,
                        const unsigned char *to_sign, size_t to_sign_len) {
  size_t extra = (check ? check->point_len + check->data_len + check->sig_len : 0) + (signer ? to_sign_len : 0);
  Job *job = calloc(1, sizeof(Job) + extra);
  if (job == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  unsigned char *b = job->bytes;
  if (check != NULL) {
    job->verify = 1;
    job->check = *check;
    memcpy(b, check->point, check->point_len);
    job->check.point = b;
    b += check->point_len;
    memcpy(b, check->data, check->data_len);
    job->check.data = b;
    b += check->data_len;
    memcpy(b, check->sig, check->sig_len);
    job->check.sig = b;
    b += check->sig_len;
  }
  if (signer != NULL) {
    memcpy(b, to_sign, to_sign_len);
    job->to_sign = b;
    job->to_sign_len = to_sign_len;
    job->sign_hash = sign_hash;
    EC_KEY_up_ref(signer);
    job->signer = signer;
  }
  napi_value promise = start_job(env, "strongroom:ecdsa", execute, complete, job, &job->deferred, &job->work);
  if (promise == NULL) {
    if (job->signer != NULL) EC_KEY_free(job->signer);
    free(job);
  }
  return promise;
}

static napi_value VerifyAsync(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  VerifyArgs a;
  if (!get_args(env, info, 5, argv) || !read_verify_args(env, argv, &a))
    BAD_ARGS("expected (curve, hash, point, data, signature)");
  return queue(env, &a, NULL, 0, NULL, 0);
}

static napi_value SignAsync(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  SignArgs a;
  if (!get_args(env, info, 3, argv) || !read_sign_args(env, argv, &a)) BAD_ARGS("expected (signer, hash, data)");
  return queue(env, NULL, a.key, a.hash, a.data, a.data_len);
}

static napi_value VerifyThenSignAsync(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  VerifyArgs v;
  SignArgs a;
  if (!get_args(env, info, 8, argv) || !read_verify_args(env, argv, &v) || !read_sign_args(env, argv + 5, &a))
    BAD_ARGS("expected (curve, hash, point, data, signature, signer, signHash, toSign)");
  return queue(env, &v, a.key, a.hash, a.data, a.data_len);
}

/* ------------------------------------------------------------------ key generation */

static const int CURVE_SIZES[CURVES] = {32, 48, 66};
#define MAX_BATCH 256

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  int curve, count, ok;
  size_t len;
  unsigned char out[]; /* count * (size + 1 + 2 * size) */
} KeyJob;

static void generate_keys(napi_env env, void *p) {
  KeyJob *job = p;
  const EC_GROUP *group = groups[job->curve];
  size_t size = CURVE_SIZES[job->curve], point = 1 + 2 * size;
  EC_KEY *key = EC_KEY_new();
  job->ok = key != NULL && EC_KEY_set_group(key, group) == 1;
  unsigned char *o = job->out;
  for (int i = 0; job->ok && i < job->count; i++, o += size + point) {
    job->ok = EC_KEY_generate_key(key) == 1 && BN_bn2binpad(EC_KEY_get0_private_key(key), o, (int)size) == (int)size &&
              EC_POINT_point2oct(group, EC_KEY_get0_public_key(key), POINT_CONVERSION_UNCOMPRESSED, o + size, point,
                                 NULL) == point;
  }
  EC_KEY_free(key); /* clears the last private key */
  ERR_clear_error();
}

static void keys_done(napi_env env, napi_status status, void *p) {
  KeyJob *job = p;
  napi_value out;
  if (status == napi_ok && job->ok) napi_create_buffer_copy(env, job->len, job->out, NULL, &out);
  else napi_get_null(env, &out);
  OPENSSL_cleanse(job->out, job->len);
  napi_resolve_deferred(env, job->deferred, out);
  napi_delete_async_work(env, job->work);
  free(job);
}

static napi_value GenerateKeysAsync(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int curve;
  int32_t count;
  if (!get_args(env, info, 2, argv) || !read_index(env, argv[0], CURVES, &curve) ||
      napi_get_value_int32(env, argv[1], &count) != napi_ok ||
      count < 1 || count > MAX_BATCH)
    BAD_ARGS("expected (curve, count of 1 to 256)");
  size_t size = CURVE_SIZES[curve];
  size_t len = (size_t)count * (size + 1 + 2 * size);
  KeyJob *job = calloc(1, sizeof(KeyJob) + len);
  if (job == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  job->curve = curve;
  job->count = count;
  job->len = len;
  napi_value promise = start_job(env, "strongroom:ec-keys", generate_keys, keys_done, job, &job->deferred, &job->work);
  if (promise == NULL) free(job);
  return promise;
}

/* ------------------------------------------------------------------ module */

static pthread_once_t groups_once = PTHREAD_ONCE_INIT;
static int groups_ready;

static void make_groups(void) {
  for (int i = 0; i < CURVES; i++) {
    groups[i] = EC_GROUP_new_by_curve_name(CURVE_NIDS[i]);
    if (groups[i] == NULL) {
      ERR_clear_error();
      return;
    }
  }
  groups_ready = 1;
}

/* Called by the module entry (addon.c) once per thread that loads the addon; the groups are built once and shared. */
int ecdsa_export(napi_env env, napi_value exports) {
  pthread_once(&groups_once, make_groups);
  if (!groups_ready) {
    napi_throw_error(env, NULL, "elliptic curve groups unavailable");
    return 0;
  }
  export_function(env, exports, "verify", Verify);
  export_function(env, exports, "verifyAsync", VerifyAsync);
  export_function(env, exports, "signer", Signer);
  export_function(env, exports, "sign", Sign);
  export_function(env, exports, "signAsync", SignAsync);
  export_function(env, exports, "verifyThenSignAsync", VerifyThenSignAsync);
  export_function(env, exports, "generateKeysAsync", GenerateKeysAsync);
  return 1;
}
