package main

import (
	"errors"
	"fmt"

	tfe "github.com/hashicorp/go-tfe"
)

// checkTeams drives teams, team access, team and organization tokens with this go-tfe:
// what is written reads back as written, a team token works with the access it was given,
// and an organization token cannot make itself an owner.
func checkTeams(client *tfe.Client, address, org, suffix string) {
	teams, err := client.Teams.List(ctx, org, tfe.TeamListOptions{})
	must(err, "list teams")
	var owners *tfe.Team
	for _, t := range teams.Items {
		if t.Name == "owners" {
			owners = t
		}
	}
	check(owners != nil, "no owners team")

	access := &tfe.OrganizationAccessOptions{
		ManagePolicies: tfe.Bool(true), ManageWorkspaces: tfe.Bool(false), ManageVCSSettings: tfe.Bool(true),
	}
	team, err := client.Teams.Create(ctx, org, tfe.TeamCreateOptions{
		Name:               tfe.String("deployers"),
		OrganizationAccess: access,
	})
	must(err, "create team")
	read, err := client.Teams.Read(ctx, team.ID)
	must(err, "read team")
	want := tfe.OrganizationAccess{ManagePolicies: true, ManageWorkspaces: false, ManageVCSSettings: true}
	check(read.OrganizationAccess != nil && *read.OrganizationAccess == want,
		"organization access: %+v", read.OrganizationAccess)
	check(read.Permissions != nil && read.Permissions.CanDestroy && read.Permissions.CanUpdateMembership,
		"an owner's permissions on the team: %+v", read.Permissions)
	step("teams: organization access and the caller's permissions read back")

	ws, err := client.Workspaces.Create(ctx, org, tfe.WorkspaceCreateOptions{Name: tfe.String("team-ws-" + suffix)})
	must(err, "create workspace for the team")
	custom := tfe.TeamAccessAddOptions{
		Access:           tfe.Access(tfe.AccessCustom),
		Runs:             tfe.RunsPermission(tfe.RunsPermissionApply),
		Variables:        tfe.VariablesPermission(tfe.VariablesPermissionRead),
		StateVersions:    tfe.StateVersionsPermission(tfe.StateVersionsPermissionWrite),
		SentinelMocks:    tfe.SentinelMocksPermission(tfe.SentinelMocksPermissionRead),
		WorkspaceLocking: tfe.Bool(true),
		Team:             team,
		Workspace:        ws,
	}
	grant, err := client.TeamAccess.Add(ctx, custom)
	must(err, "add custom team access")
	got, err := client.TeamAccess.Read(ctx, grant.ID)
	must(err, "read team access")
	check(got.Access == tfe.AccessCustom && got.Runs == tfe.RunsPermissionApply &&
		got.Variables == tfe.VariablesPermissionRead && got.StateVersions == tfe.StateVersionsPermissionWrite &&
		got.SentinelMocks == tfe.SentinelMocksPermissionRead &&
		got.WorkspaceLocking, "custom access read back as %+v", got)
	other, err := client.Teams.Create(ctx, org, tfe.TeamCreateOptions{Name: tfe.String("readers")})
	must(err, "create second team")
	_, err = client.TeamAccess.Add(ctx, tfe.TeamAccessAddOptions{
		Access: tfe.Access(tfe.AccessRead), Runs: tfe.RunsPermission(tfe.RunsPermissionApply), Team: other, Workspace: ws,
	})
	check(err != nil, "read access with runs=apply must be refused, not coerced")
	step("team access: custom fields kept as given, a fixed level with custom fields refused")

	// The team's own token works with exactly that access: lock, write state, read it back.
	tt, err := client.TeamTokens.Generate(ctx, team.ID)
	must(err, "generate team token")
	asTeam, err := tfe.NewClient(&tfe.Config{Address: address, Token: tt.Token})
	must(err, "team client")
	_, err = asTeam.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{})
	must(err, "lock with the team token")
	sv, raw := createVersion(asTeam, ws.ID, 1, "7e4d1c2a-0000-4000-8000-"+suffix[len(suffix)-12:])
	cur, err := asTeam.StateVersions.Current(ctx, ws.ID)
	must(err, "current with the team token")
	check(cur.ID == sv.ID, "current is %s, want %s", cur.ID, sv.ID)
	body, err := asTeam.StateVersions.Download(ctx, cur.DownloadURL)
	must(err, "download with the team token")
	check(string(body) == string(raw), "team download differs")
	_, err = asTeam.Workspaces.Unlock(ctx, ws.ID)
	must(err, "unlock with the team token")
	step("team token: lock, create, current, download, unlock under its custom access")

	// An organization token manages other teams but cannot mint the owners team's token
	// or add anyone to it: either would make it an owner.
	ot, err := client.OrganizationTokens.Generate(ctx, org)
	must(err, "generate organization token")
	asOrg, err := tfe.NewClient(&tfe.Config{Address: address, Token: ot.Token})
	must(err, "organization client")
	_, err = asOrg.TeamTokens.Generate(ctx, owners.ID)
	check(errors.Is(err, tfe.ErrResourceNotFound), "owners team token by the organization token: %v", err)
	err = asOrg.TeamMembers.Add(ctx, owners.ID, tfe.TeamMemberAddOptions{Usernames: []string{"site-admin"}})
	check(errors.Is(err, tfe.ErrResourceNotFound), "owners membership by the organization token: %v", err)
	seen, err := asOrg.Teams.Read(ctx, owners.ID)
	must(err, "read owners team with the organization token")
	check(seen.Permissions != nil && !seen.Permissions.CanDestroy && !seen.Permissions.CanUpdateMembership,
		"the organization token's permissions on the owners team: %+v", seen.Permissions)
	_, err = asOrg.TeamTokens.Generate(ctx, other.ID)
	must(err, "another team's token by the organization token")
	_, err = asOrg.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{})
	check(err != nil, "the organization token must not lock")
	step(fmt.Sprintf("organization token: no owners token, no owners membership (%s), other teams managed", owners.Name))
}
