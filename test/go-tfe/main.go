// Command go-tfe-compat drives a running server with the official Go client for the
// HCP Terraform / Terraform Enterprise API (github.com/hashicorp/go-tfe) and exits
// non-zero on the first answer the client cannot use or that differs from what was sent.
//
//	STRONGROOM_URL=http://127.0.0.1:8080 STRONGROOM_TOKEN=... go run .
//
// It builds in GOPATH mode against the Debian package golang-github-hashicorp-go-tfe-dev
// (GO111MODULE=off GOPATH=/usr/share/gocode): `go build` of this directory.
package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	tfe "github.com/hashicorp/go-tfe"
)

var ctx = context.Background()

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func must(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		fail(format, args...)
	}
}

func step(name string) {
	fmt.Printf("ok   %s\n", name)
}

// stateFile is a v4 state whose serial and lineage match what is sent, with string
// outputs only (this client decodes output values as strings).
func stateFile(serial int64, lineage string) []byte {
	doc := map[string]interface{}{
		"version":           4,
		"terraform_version": "1.9.5",
		"serial":            serial,
		"lineage":           lineage,
		"outputs": map[string]interface{}{
			"greeting": map[string]interface{}{"value": fmt.Sprintf("hello %d", serial), "type": "string"},
			"password": map[string]interface{}{"value": "s3cr3t", "type": "string", "sensitive": true},
		},
		"resources": []interface{}{
			map[string]interface{}{
				"mode": "managed", "type": "null_resource", "name": "n",
				"provider": "provider[\"registry.terraform.io/hashicorp/null\"]",
				"instances": []interface{}{
					map[string]interface{}{"schema_version": 0, "attributes": map[string]interface{}{"id": "1"}},
				},
			},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	must(err, "marshal state")
	return append(b, '\n')
}

func createVersion(client *tfe.Client, wsID string, serial int64, lineage string) (*tfe.StateVersion, []byte) {
	raw := stateFile(serial, lineage)
	sum := md5.Sum(raw)
	sv, err := client.StateVersions.Create(ctx, wsID, tfe.StateVersionCreateOptions{
		Lineage: tfe.String(lineage),
		MD5:     tfe.String(hex.EncodeToString(sum[:])),
		Serial:  tfe.Int64(serial),
		State:   tfe.String(base64.StdEncoding.EncodeToString(raw)),
	})
	must(err, fmt.Sprintf("create state version serial %d", serial))
	check(strings.HasPrefix(sv.ID, "sv-"), "state version id %q", sv.ID)
	check(sv.Serial == serial, "serial %d, want %d", sv.Serial, serial)
	check(!sv.CreatedAt.IsZero(), "created-at is empty")
	check(sv.DownloadURL != "", "download URL is empty")
	return sv, raw
}

// currentWithOutputs waits for the extraction job (outputs are extracted asynchronously).
func currentWithOutputs(client *tfe.Client, wsID string) *tfe.StateVersion {
	deadline := time.Now().Add(15 * time.Second)
	for {
		sv, err := client.StateVersions.CurrentWithOptions(ctx, wsID, &tfe.StateVersionCurrentOptions{Include: "outputs"})
		must(err, "current state version with outputs")
		if len(sv.Outputs) > 0 || time.Now().After(deadline) {
			return sv
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func main() {
	address := os.Getenv("STRONGROOM_URL")
	token := os.Getenv("STRONGROOM_TOKEN")
	if address == "" || token == "" {
		fail("STRONGROOM_URL and STRONGROOM_TOKEN must be set")
	}
	client, err := tfe.NewClient(&tfe.Config{Address: address, Token: token})
	must(err, "new client")
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())

	// Organizations.
	orgName := "gotfe-" + suffix
	org, err := client.Organizations.Create(ctx, tfe.OrganizationCreateOptions{
		Name:  tfe.String(orgName),
		Email: tfe.String(orgName + "@example.com"),
	})
	must(err, "create organization")
	check(org.Name == orgName && org.Email == orgName+"@example.com", "organization echo: %+v", org)
	readOrg, err := client.Organizations.Read(ctx, orgName)
	must(err, "read organization")
	check(readOrg.Name == orgName && !readOrg.CreatedAt.IsZero(), "read organization: %+v", readOrg)
	check(readOrg.Permissions != nil && readOrg.Permissions.CanDestroy,
		"organization permissions.can-destroy must be true")
	orgs, err := client.Organizations.List(ctx, tfe.OrganizationListOptions{})
	must(err, "list organizations")
	found := false
	for _, o := range orgs.Items {
		found = found || o.Name == orgName
	}
	check(found, "organization %s missing from the list", orgName)
	_, err = client.Organizations.Read(ctx, "nonexisting-"+suffix)
	check(errors.Is(err, tfe.ErrResourceNotFound), "unknown organization: %v", err)
	step("organizations: create, read, list, not found")

	// Workspaces.
	wsName := "ws-" + suffix
	ws, err := client.Workspaces.Create(ctx, orgName, tfe.WorkspaceCreateOptions{Name: tfe.String(wsName)})
	must(err, "create workspace")
	check(strings.HasPrefix(ws.ID, "ws-") && ws.Name == wsName, "workspace: %+v", ws)
	check(ws.Organization != nil && ws.Organization.Name == orgName, "workspace organization relationship")
	byName, err := client.Workspaces.Read(ctx, orgName, wsName)
	must(err, "read workspace by name")
	check(byName.ID == ws.ID, "read by name gave %s", byName.ID)
	byID, err := client.Workspaces.ReadByID(ctx, ws.ID)
	must(err, "read workspace by id")
	check(byID.Name == wsName, "read by id gave %s", byID.Name)
	_, err = client.Workspaces.Read(ctx, orgName, "nonexisting")
	check(errors.Is(err, tfe.ErrResourceNotFound), "unknown workspace: %v", err)
	step("workspaces: create, read by name and id, not found")

	// No state yet.
	_, err = client.StateVersions.Current(ctx, ws.ID)
	check(errors.Is(err, tfe.ErrResourceNotFound), "current of an empty workspace: %v", err)

	// Lock.
	locked, err := client.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{Reason: tfe.String("go-tfe compatibility")})
	must(err, "lock")
	check(locked.Locked, "workspace not locked after lock")
	_, err = client.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{})
	check(errors.Is(err, tfe.ErrWorkspaceLocked), "second lock: %v", err)
	step("lock, and 409 on a second lock")

	// Create, read, list, current, download, outputs.
	lineage := "5a1c3d7e-0000-4000-8000-" + suffix[len(suffix)-12:]
	sv1, raw1 := createVersion(client, ws.ID, 1, lineage)
	read1, err := client.StateVersions.Read(ctx, sv1.ID)
	must(err, "read state version")
	check(read1.ID == sv1.ID && read1.Serial == 1 && read1.CreatedAt.Equal(sv1.CreatedAt), "read gave %+v", read1)
	// An identical re-upload of the same serial is accepted (go-tfe's own suite does this).
	_, _ = createVersion(client, ws.ID, 1, lineage)
	sv2, raw2 := createVersion(client, ws.ID, 2, lineage)
	step("state versions: create inline (serial 1, identical serial 1 again, serial 2) and read")

	list, err := client.StateVersions.List(ctx, tfe.StateVersionListOptions{
		Organization: tfe.String(orgName),
		Workspace:    tfe.String(wsName),
	})
	must(err, "list state versions")
	check(list.TotalCount == 3 && len(list.Items) == 3 && list.CurrentPage == 1,
		"list: total %d, items %d, page %d", list.TotalCount, len(list.Items), list.CurrentPage)
	check(list.Items[0].ID == sv2.ID, "list is not newest first: %s", list.Items[0].ID)
	far, err := client.StateVersions.List(ctx, tfe.StateVersionListOptions{
		ListOptions:  tfe.ListOptions{PageNumber: 999, PageSize: 100},
		Organization: tfe.String(orgName),
		Workspace:    tfe.String(wsName),
	})
	must(err, "list page 999")
	check(len(far.Items) == 0 && far.CurrentPage == 999 && far.TotalCount == 3,
		"page 999: %d items, page %d, total %d", len(far.Items), far.CurrentPage, far.TotalCount)
	step("state versions: list, pagination past the end")

	cur := currentWithOutputs(client, ws.ID)
	check(cur.ID == sv2.ID && cur.Serial == 2, "current is %s (serial %d), want %s", cur.ID, cur.Serial, sv2.ID)
	check(len(cur.Outputs) == 2, "current has %d outputs, want 2", len(cur.Outputs))
	want := map[string]string{"greeting": "hello 2", "password": "s3cr3t"}
	for _, o := range cur.Outputs {
		check(strings.HasPrefix(o.ID, "wsout-"), "output id %q", o.ID)
		check(want[o.Name] == o.Value, "included output %s = %q, want %q", o.Name, o.Value, want[o.Name])
		one, err := client.StateVersionOutputs.Read(ctx, o.ID)
		must(err, "read output "+o.ID)
		check(one.ID == o.ID && one.Name == o.Name && one.Value == o.Value && one.Type == "string",
			"output read: %+v vs %+v", one, o)
		check(one.Sensitive == (o.Name == "password"), "output %s sensitive = %v", o.Name, one.Sensitive)
	}
	_, err = client.StateVersionOutputs.Read(ctx, "wsout-nonexisting")
	check(errors.Is(err, tfe.ErrResourceNotFound), "unknown output: %v", err)
	step("current with include=outputs, outputs read, not found")

	body, err := client.StateVersions.Download(ctx, cur.DownloadURL)
	must(err, "download current")
	check(bytes.Equal(body, raw2), "downloaded state differs from the upload (%d vs %d bytes)", len(body), len(raw2))
	body1, err := client.StateVersions.Download(ctx, sv1.DownloadURL)
	must(err, "download first")
	check(bytes.Equal(body1, raw1), "first version's download differs")
	_, err = client.StateVersions.Download(ctx, cur.DownloadURL[:len(cur.DownloadURL)-10]+"nonexisting")
	check(err != nil, "a mangled download URL must fail")
	_, err = client.StateVersions.Download(ctx, "/api/v2/! / nope")
	check(errors.Is(err, tfe.ErrResourceNotFound), "unknown route: %v", err)
	_, err = client.StateVersions.Read(ctx, "sv-nonexisting")
	check(errors.Is(err, tfe.ErrResourceNotFound), "unknown state version: %v", err)
	step("download byte for byte, mangled URL, unknown route and version")

	checkPendingUpload(client, address, token, ws.ID, lineage, sv2, raw2)

	// Unlock, and the unlocked/force-unlock answers.
	unlocked, err := client.Workspaces.Unlock(ctx, ws.ID)
	must(err, "unlock")
	check(!unlocked.Locked, "workspace still locked after unlock")
	_, err = client.Workspaces.Unlock(ctx, ws.ID)
	check(errors.Is(err, tfe.ErrWorkspaceNotLocked), "second unlock: %v", err)
	_, err = client.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{})
	must(err, "lock again")
	forced, err := client.Workspaces.ForceUnlock(ctx, ws.ID)
	must(err, "force-unlock")
	check(!forced.Locked, "workspace still locked after force-unlock")
	_, err = client.Workspaces.ForceUnlock(ctx, ws.ID)
	check(errors.Is(err, tfe.ErrWorkspaceNotLocked), "second force-unlock: %v", err)
	step("unlock, force-unlock, and 409 when not locked")

	// Writing without the lock is refused.
	rawX := stateFile(4, lineage)
	sum := md5.Sum(rawX)
	_, err = client.StateVersions.Create(ctx, ws.ID, tfe.StateVersionCreateOptions{
		Lineage: tfe.String(lineage), MD5: tfe.String(hex.EncodeToString(sum[:])), Serial: tfe.Int64(4),
		State: tfe.String(base64.StdEncoding.EncodeToString(rawX)),
	})
	check(err != nil, "create without the lock must fail")
	step("create refused without the lock")

	checkTeams(client, address, orgName, suffix)
	checkProjects(address, token, orgName, suffix)

	must(client.Workspaces.Delete(ctx, orgName, wsName), "delete workspace")
	_, err = client.Workspaces.ReadByID(ctx, ws.ID)
	check(errors.Is(err, tfe.ErrResourceNotFound), "deleted workspace: %v", err)
	must(client.Organizations.Delete(ctx, orgName), "delete organization")
	_, err = client.Organizations.Read(ctx, orgName)
	check(errors.Is(err, tfe.ErrResourceNotFound), "deleted organization: %v", err)
	step("delete workspace and organization")
	fmt.Println("go-tfe compatibility: all checks passed")
}
