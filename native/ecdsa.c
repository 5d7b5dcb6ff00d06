/*
 * ECDSA signature checks for the certificate-request hot path.
 *
 * node:crypto imports every public key through OpenSSL 3's EVP layer: about 45 us for a
 * P-256 key (a new EC_GROUP and a full key check per import) and a further ~10 us when the
 * key is first used, before the ~40 us of the verification itself. This addon decodes the
 * point against a group built once per curve, checks that it is on the curve (the curves
 * here have cofactor 1, so that is the whole public-key validation), and verifies with
 * OpenSSL's own ECDSA code, linked from the running Node.js binary.
 *
 * verify(curve, hash, point, data, signature) -> 1 valid, 0 invalid, -1 unusable public key
 * verifyAsync(...)                            -> the same number, through a Promise, computed
 *                                                on the libuv threadpool
 * curve: 0 P-256, 1 P-384, 2 P-521; hash: 0 SHA-1, 1 SHA-256, 2 SHA-384, 3 SHA-512.
 * signature: DER Ecdsa-Sig-Value, checked strictly as OpenSSL does.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#define NAPI_VERSION 8
#include <node_api.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CURVES 3
#define HASHES 4
#define RESULT_ERROR -2

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
    result = md_len > 0 && sig_len <= 0x7fffffff && ECDSA_verify(0, md, (int)md_len, sig, (int)sig_len, key) == 1 ? 1 : 0;
  }
  EC_POINT_free(p);
  /* Failed decodes leave entries on this thread's error queue, which Node.js shares. */
  ERR_clear_error();
  return result;
}

typedef struct {
  int curve, hash;
  const unsigned char *point, *data, *sig;
  size_t point_len, data_len, sig_len;
} Args;

static int read_buffer(napi_env env, napi_value v, const unsigned char **out, size_t *len) {
  bool is_buffer = false;
  if (napi_is_buffer(env, v, &is_buffer) != napi_ok || !is_buffer) return 0;
  void *p;
  if (napi_get_buffer_info(env, v, &p, len) != napi_ok) return 0;
  *out = p;
  return 1;
}

static int read_args(napi_env env, napi_callback_info info, Args *a) {
  size_t argc = 5;
  napi_value argv[5];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 5) goto bad;
  int32_t curve, hash;
  if (napi_get_value_int32(env, argv[0], &curve) != napi_ok || curve < 0 || curve >= CURVES) goto bad;
  if (napi_get_value_int32(env, argv[1], &hash) != napi_ok || hash < 0 || hash >= HASHES) goto bad;
  a->curve = curve;
  a->hash = hash;
  if (!read_buffer(env, argv[2], &a->point, &a->point_len) || !read_buffer(env, argv[3], &a->data, &a->data_len) ||
      !read_buffer(env, argv[4], &a->sig, &a->sig_len))
    goto bad;
  return 1;
bad:
  napi_throw_type_error(env, NULL, "expected (curve, hash, point, data, signature)");
  return 0;
}

static napi_value Verify(napi_env env, napi_callback_info info) {
  Args a;
  if (!read_args(env, info, &a)) return NULL;
  int r = ecdsa_verify(a.curve, a.hash, a.point, a.point_len, a.data, a.data_len, a.sig, a.sig_len);
  napi_value out;
  napi_create_int32(env, r, &out);
  return out;
}

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  Args args;
  int result;
  unsigned char bytes[]; /* copies of point, data and signature */
} Job;

static void execute(napi_env env, void *p) {
  (void)env;
  Job *job = p;
  Args *a = &job->args;
  job->result = ecdsa_verify(a->curve, a->hash, a->point, a->point_len, a->data, a->data_len, a->sig, a->sig_len);
}

static void complete(napi_env env, napi_status status, void *p) {
  Job *job = p;
  napi_value out;
  napi_create_int32(env, status == napi_ok ? job->result : RESULT_ERROR, &out);
  napi_resolve_deferred(env, job->deferred, out);
  napi_delete_async_work(env, job->work);
  free(job);
}

static napi_value VerifyAsync(napi_env env, napi_callback_info info) {
  Args a;
  if (!read_args(env, info, &a)) return NULL;
  Job *job = malloc(sizeof(Job) + a.point_len + a.data_len + a.sig_len);
  if (job == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  /* The caller's buffers may be reused once this returns: the job works on its own copies. */
  unsigned char *b = job->bytes;
  memcpy(b, a.point, a.point_len);
  memcpy(b + a.point_len, a.data, a.data_len);
  memcpy(b + a.point_len + a.data_len, a.sig, a.sig_len);
  job->args = a;
  job->args.point = b;
  job->args.data = b + a.point_len;
  job->args.sig = b + a.point_len + a.data_len;
  napi_value promise, name;
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "strongroom:ecdsa-verify", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, execute, complete, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    free(job);
    napi_throw_error(env, NULL, "could not queue the verification");
    return NULL;
  }
  return promise;
}

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

/* May run once per worker thread that loads the addon; the groups are shared. */
NAPI_MODULE_INIT() {
  pthread_once(&groups_once, make_groups);
  if (!groups_ready) {
    napi_throw_error(env, NULL, "elliptic curve groups unavailable");
    return NULL;
  }
  napi_value fn;
  napi_create_function(env, "verify", NAPI_AUTO_LENGTH, Verify, NULL, &fn);
  napi_set_named_property(env, exports, "verify", fn);
  napi_create_function(env, "verifyAsync", NAPI_AUTO_LENGTH, VerifyAsync, NULL, &fn);
  napi_set_named_property(env, exports, "verifyAsync", fn);
  return exports;
}
