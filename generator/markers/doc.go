// Package markers parses the comment markers of an API types package ("+groupName=...",
// "+genclient:nonNamespaced", "+kubebuilder:resource:scope=Cluster,shortName=wd") into
// typed values with their source position.
//
// Every marker aagen knows is a Definition in a Registry: its name, what it may annotate
// (package, type or field), its arguments, and whether aagen applies it yet. A marker
// under a prefix aagen owns (genclient, groupName, kubebuilder:, aagen:) that no
// definition matches is an error that names the nearest known marker, so a typo such as
// "+genclient:nonNamspaced" is never silently ignored. Markers of other tools
// ("+listType=atomic", "+k8s:openapi-gen=true") pass through untouched for
// the code generators that read them.
package markers
