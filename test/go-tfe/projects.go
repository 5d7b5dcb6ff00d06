package main

import (
	"bytes"
	"net/url"
	"reflect"

	"github.com/svanharmelen/jsonapi"
)

// The project shapes of go-tfe's later releases (Project, ProjectCreateOptions, the
// workspace's and organization's project relationships), decoded and encoded with the
// JSON:API codec this go-tfe release uses: the Debian package predates projects.
type project struct {
	ID   string `jsonapi:"primary,projects"`
	Name string `jsonapi:"attr,name"`
}

type projectCreate struct {
	Type string `jsonapi:"primary,projects"`
	Name string `jsonapi:"attr,name"`
}

type organizationWithDefault struct {
	Name           string   `jsonapi:"primary,organizations"`
	DefaultProject *project `jsonapi:"relation,default-project"`
}

type workspaceInProject struct {
	ID      string   `jsonapi:"primary,workspaces"`
	Name    string   `jsonapi:"attr,name"`
	Project *project `jsonapi:"relation,project,omitempty"`
}

func listProjects(address, token, org, query string) []*project {
	status, body := api(address, token, "GET", "organizations/"+org+"/projects"+query, nil)
	check(status == 200, "list projects%s: %d %s", query, status, body)
	items, err := jsonapi.UnmarshalManyPayload(bytes.NewReader(body), reflect.TypeOf(new(project)))
	must(err, "decode project list")
	out := make([]*project, len(items))
	for i, it := range items {
		out[i] = it.(*project)
	}
	return out
}

// checkProjects does what Terraform's cloud block with `workspaces { project = "…" }` and
// go-tfe's organization read with the default-project include do.
func checkProjects(address, token, org, suffix string) {
	status, body := api(address, token, "GET", "organizations/"+org+"?include=default-project", nil)
	check(status == 200, "organization with default-project: %d %s", status, body)
	var o organizationWithDefault
	decode(body, &o)
	check(o.DefaultProject != nil && o.DefaultProject.Name == "Default Project", "default project: %+v", o.DefaultProject)

	name := "Platform " + suffix[len(suffix)-6:]
	byName := "?" + url.Values{"filter[names]": {name}}.Encode()
	check(len(listProjects(address, token, org, byName)) == 0, "project %q exists before it is created", name)
	status, body = api(address, token, "POST", "organizations/"+org+"/projects", marshal(&projectCreate{Name: name}))
	check(status == 201, "create project: %d %s", status, body)
	var created project
	decode(body, &created)
	check(created.Name == name && len(created.ID) > 4 && created.ID[:4] == "prj-", "created project: %+v", created)
	found := listProjects(address, token, org, byName)
	check(len(found) == 1 && found[0].ID == created.ID, "filter[names] found %d projects", len(found))
	step("projects: default-project include, filter[names], create (as the cloud block does)")

	wsName := "in-project-" + suffix
	status, body = api(address, token, "POST", "organizations/"+org+"/workspaces",
		marshal(&workspaceInProject{Name: wsName, Project: &created}))
	check(status == 201, "create workspace in project: %d %s", status, body)
	var ws workspaceInProject
	decode(body, &ws)
	check(ws.Project != nil && ws.Project.ID == created.ID, "workspace project: %+v", ws.Project)
	filter := "organizations/" + org + "/workspaces?filter%5Bproject%5D%5Bid%5D=" + created.ID
	status, body = api(address, token, "GET", filter, nil)
	check(status == 200, "list workspaces of project: %d", status)
	items, err := jsonapi.UnmarshalManyPayload(bytes.NewReader(body), reflect.TypeOf(new(workspaceInProject)))
	must(err, "decode workspace list")
	check(len(items) == 1 && items[0].(*workspaceInProject).ID == ws.ID,
		"filter[project][id] gave %d workspaces", len(items))

	status, _ = api(address, token, "DELETE", "projects/"+created.ID, nil)
	check(status == 409, "deleting a project holding a workspace answered %d", status)
	status, _ = api(address, token, "DELETE", "workspaces/"+ws.ID, nil)
	check(status == 204, "delete workspace: %d", status)
	status, _ = api(address, token, "DELETE", "projects/"+created.ID, nil)
	check(status == 204, "delete empty project: %d", status)
	step("projects: workspace created in a project, filter[project][id], delete refused while it holds one")
}
