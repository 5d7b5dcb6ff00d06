package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"

	tfe "github.com/hashicorp/go-tfe"
)

// checkPendingUpload: a version created without content (an apply whose upload was cut
// off) leaves the last finalized version current, so Current + Download keep working;
// its upload makes it current. This go-tfe cannot create pending versions, so the create
// and the upload are raw requests shaped like later go-tfe's.
func checkPendingUpload(
	client *tfe.Client, address, token, wsID, lineage string, last *tfe.StateVersion, lastRaw []byte,
) {
	raw := stateFile(last.Serial+1, lineage)
	sum := md5.Sum(raw)
	attrs := map[string]interface{}{"serial": last.Serial + 1, "md5": hex.EncodeToString(sum[:]), "lineage": lineage}
	data := map[string]interface{}{"type": "state-versions", "attributes": attrs}
	doc, err := json.Marshal(map[string]interface{}{"data": data})
	must(err, "marshal pending create")
	status, body := api(address, token, "POST", "workspaces/"+wsID+"/state-versions", doc)
	check(status == 201, "create pending version: %d %s", status, body)
	var created struct {
		Data struct {
			ID         string `json:"id"`
			Attributes struct {
				UploadURL string `json:"hosted-state-upload-url"`
			} `json:"attributes"`
		} `json:"data"`
	}
	must(json.Unmarshal(body, &created), "decode pending create")

	cur, err := client.StateVersions.Current(ctx, wsID)
	must(err, "current while a version is pending")
	check(cur.ID == last.ID, "current is %s while pending, want the last finalized %s", cur.ID, last.ID)
	got, err := client.StateVersions.Download(ctx, cur.DownloadURL)
	must(err, "download while a version is pending")
	check(bytes.Equal(got, lastRaw), "the download while pending is not the last finalized state")
	_, err = client.Workspaces.Unlock(ctx, wsID)
	check(err != nil, "unlock while the newest version is pending must be refused")

	status, body = api(address, token, "PUT", created.Data.Attributes.UploadURL, raw)
	check(status == 200, "upload: %d %s", status, body)
	cur, err = client.StateVersions.Current(ctx, wsID)
	must(err, "current after the upload")
	check(cur.ID == created.Data.ID, "current is %s after the upload, want %s", cur.ID, created.Data.ID)
	got, err = client.StateVersions.Download(ctx, cur.DownloadURL)
	must(err, "download after the upload")
	check(bytes.Equal(got, raw), "the download after the upload differs")
	step(fmt.Sprintf("pending version: current stays serial %d until the upload makes serial %d current",
		last.Serial, last.Serial+1))
}
