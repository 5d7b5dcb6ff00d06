package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/svanharmelen/jsonapi"
)

// api sends one request with the bearer token, as go-tfe does, and returns the status and body.
// It is used where this go-tfe release has no method (projects, pending state versions, uploads).
func api(address, token, method, path string, body []byte) (int, []byte) {
	url := path
	if !strings.HasPrefix(path, "http") {
		url = strings.TrimRight(address, "/") + "/api/v2/" + strings.TrimLeft(path, "/")
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	must(err, "new request")
	if !strings.Contains(url, "/v1/object/") {
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/vnd.api+json")
		req.Header.Set("Content-Type", "application/vnd.api+json")
	} else {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	res, err := http.DefaultClient.Do(req)
	must(err, method+" "+path)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	must(err, "read body")
	return res.StatusCode, out
}

// marshal encodes a request document the way go-tfe does (no included resources).
func marshal(model interface{}) []byte {
	var buf bytes.Buffer
	must(jsonapi.MarshalPayloadWithoutIncluded(&buf, model), "marshal")
	return buf.Bytes()
}

// decode reads a single-resource document with go-tfe's JSON:API codec.
func decode(body []byte, model interface{}) {
	must(jsonapi.UnmarshalPayload(bytes.NewReader(body), model), "decode "+string(body))
}
