package markers

// Owned are the marker prefixes aagen reads; an unknown marker under one of them is an error.
var owned = []string{"groupName", "genclient", "kubebuilder:", "aagen:"}

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
			Help: "Store this version of the kind (the hub) when the kind is defined in several versions: exactly one of them carries it. " +
				"Its Go type is the kind's internal version; the other versions convert to and from it (conversion-gen, plus your conversion.go)."},
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
			Keys: []string{"warning"},
			Help: "This version of the kind is deprecated: every request in it gets a Warning header (kubectl prints it), " +
				"warning=<text> or, like a CRD, \"<group>/<version> <Kind> is deprecated\"."},
		&Definition{Name: "aagen:backend", Target: OnType, Form: Flag,
			Help: "Serve the kind from your own code instead of etcd: aagen creates, once, backend.go next to the kind's hooks.go with NewBackend, " +
				"which returns a runtime/backend Reader (get, list) that may also be a Watcher (watch), a Writer (create, update, delete) and a Starter " +
				"(started with a loopback client). Discovery lists exactly the verbs it implements; other verbs are 405. No /status or /scale."},
		&Definition{Name: "kubebuilder:unservedversion", Target: OnType, Form: Flag,
			Help: "Do not serve this version of the kind (not installed, not in discovery, no client); objects still convert to and from it."},

		// Imperative subresources (see generator/model/subresources.go and runtime/subresource).
		&Definition{Name: "aagen:subresource:action", Target: OnType, Form: Args,
			Keys: []string{"name", "input", "output"},
			Help: "An action, POST <plural>/<name>/<sub> like pods/eviction (repeatable): name=<sub>, input=<type of the body>, optional output=<type of the answer> " +
				"(default: the kind; Status for a metav1.Status). The types are structs of the same package with metav1.TypeMeta. " +
				"You implement Hooks.<Name> in pkg/registry/<group>/<kind>/subresource_<sub>.go; the client gets <Name>; roles: edit (create)."},
		&Definition{Name: "aagen:subresource:view", Target: OnType, Form: Args,
			Keys: []string{"name", "type", "update"},
			Help: "A view, GET <plural>/<name>/<sub> answering another representation of the object like /scale (repeatable): name=<sub>, type=<view type, " +
				"a struct of the same package with metav1.TypeMeta>, update=true to take PUT and PATCH too. You implement Hooks.Get<Name> (and Set<Name>); " +
				"the client gets Get<Name> (and Update<Name>); roles: view (get), edit (update, patch)."},
		&Definition{Name: "aagen:subresource:stream", Target: OnType, Form: Args,
			Keys: []string{"name"},
			Help: "A stream, GET <plural>/<name>/<sub>[?follow=true] answering chunked text as it is written, like pods/log (repeatable): name=<sub>. " +
				"You implement Hooks.Stream<Name>; roles: view (get). A name other than those kube-apiserver treats as long-running " +
				"(attach, exec, log, portforward, proxy) gets a warning: kube-apiserver would apply its request timeout."},
		&Definition{Name: "aagen:subresource:connection", Target: OnType, Form: Args,
			Keys: []string{"name"},
			Help: "A connection, an upgraded bidirectional stream on <plural>/<name>/<sub> like pods/attach, in the websocket protocol v5.channel.k8s.io " +
				"of kubectl and client-go's websocket executor (repeatable): name=<sub>. You implement Hooks.Connect<Name>; roles: edit (get, create, as pods/exec). " +
				"Same naming advice as for streams."},

		// Validation and defaulting (see generator/model/validation.go): the markers become the
		// kind's OpenAPI schema, which the server validates every write against like a CRD's.
		field("kubebuilder:default", Value, "Default value as JSON (e.g. 3, \"Wood\", [\"a\"]), set on create and when an object without the field is read from storage. "+
			"The field must be a pointer or have omitempty."),
		field("default", Value, "Same as +kubebuilder:default (code-generator's and kube-openapi's spelling)."),
		field("kubebuilder:validation:Required", Flag, "The field must be present (listed in the schema's required)."),
		field("kubebuilder:validation:Optional", Flag, "The field may be left out."),
		field("required", Flag, "Same as +kubebuilder:validation:Required."),
		field("optional", Flag, "Same as +kubebuilder:validation:Optional."),
		field("kubebuilder:validation:Minimum", Value, "Minimum of a number."),
		field("kubebuilder:validation:Maximum", Value, "Maximum of a number."),
		field("kubebuilder:validation:ExclusiveMinimum", Flag, "The minimum itself is not allowed."),
		field("kubebuilder:validation:ExclusiveMaximum", Flag, "The maximum itself is not allowed."),
		field("kubebuilder:validation:MultipleOf", Value, "The number must be a multiple of this."),
		field("kubebuilder:validation:MinLength", Value, "Minimum string length."),
		field("kubebuilder:validation:MaxLength", Value, "Maximum string length."),
		field("kubebuilder:validation:Pattern", Value, "Regular expression (RE2) the string must match; quote it when it has commas."),
		field("kubebuilder:validation:Format", Value, "String format a CRD validates: date-time, date, duration, email, uri, hostname, ipv4, ipv6, cidr, mac, uuid, byte, ..."),
		field("kubebuilder:validation:Enum", Value, "Allowed values, separated by ';' (scalars only)."),
		field("kubebuilder:validation:MinItems", Value, "Minimum list length."),
		field("kubebuilder:validation:MaxItems", Value, "Maximum list length."),
		&Definition{Name: "kubebuilder:validation:UniqueItems", Target: OnField | OnType, Form: Value,
			Help: "Rejected like in a CRD (quadratic cost): use +listType=set, which checks uniqueness in linear time."},
		field("kubebuilder:validation:MinProperties", Value, "Minimum number of map entries or object fields."),
		field("kubebuilder:validation:MaxProperties", Value, "Maximum number of map entries or object fields."),
		&Definition{Name: "kubebuilder:validation:XValidation", Target: OnType | OnField, Form: Args,
			Keys: []string{"rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"},
			Help: "A CEL rule, evaluated like a CRD's x-kubernetes-validations (self; oldSelf on update for transition rules): " +
				"rule=<CEL>, message or messageExpression, reason=FieldValueInvalid|FieldValueForbidden|FieldValueRequired|FieldValueDuplicate, fieldPath=.x. Repeatable."},
		pending("kubebuilder:validation:Type", Value, "Override the OpenAPI type.",
			"the schema's type comes from the Go type (kube-openapi); overriding it would publish a schema the server does not decode"),
		pending("kubebuilder:validation:XIntOrString", Flag, "The field is an int or a string.",
			"use intstr.IntOrString, whose schema already is int-or-string"),
		pending("kubebuilder:validation:EmbeddedResource", Flag, "The field holds an embedded object.",
			"use runtime.RawExtension; the embedded apiVersion/kind/metadata checks of CRDs are not applied yet"),
		pending("kubebuilder:pruning:PreserveUnknownFields", Flag, "Keep unknown fields.",
			"Go types drop unknown fields when decoding; use runtime.RawExtension for free-form data"),
	)
}

func field(name string, form Form, help string) *Definition {
	return &Definition{Name: name, Target: OnField | OnType, Form: form, Help: help}
}

func pending(name string, form Form, help, why string) *Definition {
	return &Definition{Name: name, Target: OnField | OnType, Form: form, Help: help, Pending: why}
}
