{
  "targets": [
    {
      "target_name": "strongroom_native",
      "sources": ["native/ecdsa.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    }
  ]
}
