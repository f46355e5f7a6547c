package bindingspec

import "slices"

// Capability describes one platform feature a bundle can be granted.
type Capability struct {
	Name string
	// Grandfathered capabilities are reachable with the binding's list absent,
	// because every app tool authored before the list existed relies on them.
	Grandfathered bool
	// Host capabilities are performed by the browser host over bridge messages;
	// /capability refuses them and runtime.host_capabilities lists them.
	Host bool
}

// Catalog is every capability a binding may name (seed 000, "Capabilities").
var Catalog = []Capability{
	{Name: "file_preview", Grandfathered: true},
	{Name: "list_files", Grandfathered: true},
	{Name: "split_document", Grandfathered: true},
	{Name: "get_translation", Grandfathered: true},
	{Name: "document_selection", Host: true},
	{Name: "next_review_task", Host: true},
	{Name: "abort_review_task", Host: true},
	{Name: "list_citations"},
}

// LookupCapability returns the catalog entry of name.
func LookupCapability(name string) (Capability, bool) {
	for _, c := range Catalog {
		if c.Name == name {
			return c, true
		}
	}
	return Capability{}, false
}

// GrantedCapabilities returns the capabilities a spec grants, in catalog
// order: the grandfathered ones always, plus those its list names.
func GrantedCapabilities(s Spec) []string {
	var out []string
	for _, c := range Catalog {
		if c.Grandfathered || slices.Contains(s.Capabilities, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// OfferedCapabilities is what a mint advertises: the capabilities the
// deployment serves and the spec grants (served ∩ granted), and the subset of
// those the host performs.
func OfferedCapabilities(s Spec, served func(name string) bool) (capabilities, host []string) {
	capabilities, host = []string{}, []string{}
	for _, name := range GrantedCapabilities(s) {
		if !served(name) {
			continue
		}
		capabilities = append(capabilities, name)
		if c, _ := LookupCapability(name); c.Host {
			host = append(host, name)
		}
	}
	return capabilities, host
}
