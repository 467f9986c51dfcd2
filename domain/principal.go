package domain

// Principal is who a request or a command acts for: one API key, of one
// tenant, admin or not; or one person signed in to the console (Person
// and Role set, no key, never admin).
type Principal struct {
	KeyID  string
	Tenant string
	Admin  bool
	Person string // the console's signed-in person: a name or e-mail address
	Role   string // the person's console role (RoleApprover, ...)
}

// Actor is how the ledger names a principal: "key:<keyId>" for a key,
// "person:<name>" for a person signed in to the console.
func (p Principal) Actor() string {
	if p.Person != "" {
		return "person:" + p.Person
	}
	return "key:" + p.KeyID
}

// CanSee is the tenant rule: a principal sees what its tenant owns, an
// admin sees everything. Something that names no owner is an admin's only.
// What a principal may not see is answered as absent (404), never 403, so
// that ids of other tenants leak nothing.
func (p Principal) CanSee(owner string) bool {
	return p.Admin || (owner != "" && owner == p.Tenant)
}
