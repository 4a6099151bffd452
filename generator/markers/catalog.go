package markers

// Owned are the marker prefixes aagen reads; an unknown marker under one of them is an error.
var owned = []string{"groupName", "genclient", "kubebuilder:", "aagen:"}

const pendingIssue5 = "validation and defaults from markers come with resource semantics (issue 5)"

// Default returns the registry of every marker aagen knows. It is built on each call:
// there is no shared mutable registry.
func Default() *Registry {
	return NewRegistry(owned,
		// Package markers.
		&Definition{Name: "groupName", Target: OnPackage, Form: Value,
			Help: "API group of the package's kinds, e.g. +groupName=shop.example.com (in doc.go, above the package clause)."},
		&Definition{Name: "kubebuilder:object:generate", Target: OnPackage | OnType, Form: Flag,
			Help: "kubebuilder's deepcopy switch; aagen always generates deepcopy for served kinds."},
		&Definition{Name: "kubebuilder:skip", Target: OnPackage, Form: Flag,
			Help: "Skip this package: aagen serves none of its kinds."},
		&Definition{Name: "kubebuilder:skipversion", Target: OnPackage, Form: Flag,
			Help: "Do not serve this version."},

		// Kind markers, client-gen's vocabulary.
		&Definition{Name: "genclient", Target: OnType, Form: Flag,
			Help: "Serve this type as a kind and generate its typed client."},
		&Definition{Name: "genclient:nonNamespaced", Target: OnType, Form: Flag,
			Help: "The kind is cluster-scoped."},
		&Definition{Name: "genclient:noStatus", Target: OnType, Form: Flag,
			Help: "Serve no /status subresource even though the kind has a Status field."},
		&Definition{Name: "genclient:noVerbs", Target: OnType, Form: Flag,
			Help: "Generate no client verbs (client-gen)."},
		&Definition{Name: "genclient:readonly", Target: OnType, Form: Flag,
			Help: "Generate only read verbs in the client (client-gen)."},
		&Definition{Name: "genclient:onlyVerbs", Target: OnType, Form: Value,
			Help: "Generate only these client verbs (client-gen)."},
		&Definition{Name: "genclient:skipVerbs", Target: OnType, Form: Value,
			Help: "Skip these client verbs (client-gen)."},
		&Definition{Name: "genclient:method", Target: OnType, Form: Value,
			Help: "Extra client method (client-gen syntax)."},

		// Kind markers, kubebuilder's vocabulary.
		&Definition{Name: "kubebuilder:object:root", Target: OnType, Form: Flag,
			Help: "The type is a root object (a kind or a kind's List)."},
		&Definition{Name: "kubebuilder:resource", Target: OnType, Form: Args,
			Keys: []string{"path", "scope", "shortName", "categories", "singular"},
			Help: "Resource names and scope: path=<plural>,scope=Namespaced|Cluster,shortName=a;b,categories=all;x,singular=<name>."},
		&Definition{Name: "kubebuilder:subresource:status", Target: OnType, Form: Flag,
			Help: "Serve the /status subresource."},
		&Definition{Name: "kubebuilder:storageversion", Target: OnType, Form: Flag,
			Help: "Store this version of the kind (the hub) when a group serves several versions."},
		&Definition{Name: "kubebuilder:subresource:scale", Target: OnType, Form: Args,
			Keys: []string{"specpath", "statuspath", "selectorpath"},
			Help: "Serve /scale (autoscaling/v1 Scale, for kubectl scale and autoscalers): specpath=.spec.replicas (an int32 or *int32 under .spec), " +
				"statuspath=.status.replicas (an int32 under .status), optional selectorpath=.status.selector (a string: the label selector in string form)."},
		&Definition{Name: "kubebuilder:printcolumn", Target: OnType, Form: Args,
			Keys: []string{"name", "type", "JSONPath", "description", "priority", "format"},
			Help: "A column of kubectl get, after NAME and before AGE (repeatable, in order): name=<header>, type=integer|number|string|boolean|date " +
				"(date shows an age), JSONPath=<.path> (CRD rules), optional description, priority=<n> (above 0: only with -o wide) and format."},
		&Definition{Name: "kubebuilder:selectablefield", Target: OnType, Form: Args,
			Keys: []string{"JSONPath"},
			Help: "A field usable in --field-selector (repeatable): JSONPath=.spec.x names a string, integer or boolean field outside metadata; " +
				"metadata.name and metadata.namespace are always selectable."},
		&Definition{Name: "kubebuilder:deprecatedversion", Target: OnType, Form: Args,
			Keys: []string{"warning"}, Pending: "deprecation warnings come with versions and conversion (issue 5)",
			Help: "Mark this version deprecated."},
		&Definition{Name: "kubebuilder:unservedversion", Target: OnType, Form: Flag, Pending: "unserved versions come with versions and conversion (issue 5)",
			Help: "Do not serve this version."},

		// Field markers with validation meaning (recognised now, applied with issue 5).
		pendingField("kubebuilder:default", Value, "Default value (JSON) applied on create and read."),
		pendingField("kubebuilder:validation:Required", Flag, "The field is required."),
		pendingField("kubebuilder:validation:Optional", Flag, "The field is optional."),
		pendingField("kubebuilder:validation:Minimum", Value, "Minimum value."),
		pendingField("kubebuilder:validation:Maximum", Value, "Maximum value."),
		pendingField("kubebuilder:validation:ExclusiveMinimum", Value, "The minimum is exclusive."),
		pendingField("kubebuilder:validation:ExclusiveMaximum", Value, "The maximum is exclusive."),
		pendingField("kubebuilder:validation:MultipleOf", Value, "The value must be a multiple of this."),
		pendingField("kubebuilder:validation:MinLength", Value, "Minimum string length."),
		pendingField("kubebuilder:validation:MaxLength", Value, "Maximum string length."),
		pendingField("kubebuilder:validation:Pattern", Value, "Regular expression the string must match."),
		pendingField("kubebuilder:validation:Format", Value, "String format (date-time, uri, ...)."),
		pendingField("kubebuilder:validation:Enum", Value, "Allowed values, separated by ';'."),
		pendingField("kubebuilder:validation:MinItems", Value, "Minimum list length."),
		pendingField("kubebuilder:validation:MaxItems", Value, "Maximum list length."),
		pendingField("kubebuilder:validation:UniqueItems", Value, "List items must be unique."),
		pendingField("kubebuilder:validation:MinProperties", Value, "Minimum number of map entries."),
		pendingField("kubebuilder:validation:MaxProperties", Value, "Maximum number of map entries."),
		pendingField("kubebuilder:validation:Type", Value, "Override the OpenAPI type."),
		pendingField("kubebuilder:validation:XIntOrString", Flag, "The field is an int or a string."),
		pendingField("kubebuilder:validation:EmbeddedResource", Flag, "The field holds an embedded object."),
		pendingField("kubebuilder:pruning:PreserveUnknownFields", Flag, "Keep unknown fields."),
		&Definition{Name: "kubebuilder:validation:XValidation", Target: OnType | OnField, Form: Args,
			Keys: []string{"rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"}, Pending: pendingIssue5,
			Help: "A CEL validation rule."},
	)
}

func pendingField(name string, form Form, help string) *Definition {
	return &Definition{Name: name, Target: OnField | OnType, Form: form, Help: help, Pending: pendingIssue5}
}
