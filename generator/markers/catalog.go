package markers

// Owned are the marker prefixes aagen reads; an unknown marker under one of them is an error,
// except under a prefix of toolOwned.
var owned = []string{"groupName", "genclient", "kubebuilder:", "aagen:"}

// toolOwned are the owned prefixes that belong to another tool (controller-gen): an unknown
// marker under one of them is a warning, as controller-gen ignores markers it does not
// register (so a CRD of the same types does not check it either), unless it is a typo of
// a known marker, which stays an error.
var toolOwned = []string{"kubebuilder:"}

// Default returns the registry of every marker aagen knows. It is built on each call:
// there is no shared mutable registry.
func Default() *Registry {
	defs := append([]*Definition(nil),
		// Package markers.
		valued(&Definition{Name: "groupName", Target: OnPackage, Form: Value,
			Help: "API group of the package's kinds, e.g. +groupName=shop.example.com (in doc.go, above the package clause)."}, stringOf[GroupName]()),
		valued(&Definition{Name: "groupGoName", Target: OnPackage, Form: Value,
			Help: "The group's name in Go identifiers of the generated clients, as client-gen reads it: +groupGoName=CertManager gives CertManagerV1() " +
				"for cert-manager.io. Needed when the group's first label is not a Go identifier (it has a '-'); the same in every version of the group."}, stringOf[GroupGoName]()),
		&Definition{Name: "kubebuilder:object:generate", Target: OnPackage | OnType, Form: Flag,
			Help: "kubebuilder's deepcopy switch; aagen always generates deepcopy for served kinds."},
		valued(&Definition{Name: "kubebuilder:skip", Target: OnPackage, Form: Flag,
			Help: "Skip this package: aagen serves none of its kinds."}, flagOf[Skip]()),
		valued(&Definition{Name: "kubebuilder:skipversion", Target: OnPackage | OnType, Form: Flag,
			Help: "Do not serve this version: on the package, none of its kinds; on a kind, that kind (it is left out of this version entirely)."}, flagOf[SkipVersion]()),
		&Definition{Name: "versionName", Target: OnPackage, Form: Value,
			Help:    "controller-gen's name of the package's API version.",
			Ignored: "the version is the package's name (v1, v1beta1, ...); aagen serves that"},
		&Definition{Name: "kubebuilder:ac:generate", Target: OnPackage | OnType, Form: Flag,
			Help:    "controller-gen's switch for apply configurations.",
			Ignored: "aagen always generates apply configurations (pkg/generated/applyconfiguration)"},
		&Definition{Name: "kubebuilder:ac:output:package", Target: OnPackage, Form: Value,
			Help:    "controller-gen's output package of apply configurations.",
			Ignored: "aagen writes apply configurations under the generated directory (--generated-dir)"},
		&Definition{Name: "kubebuilder:rbac", Target: OnPackage | OnType | OnField, Form: Raw,
			Help:    "A controller's RBAC rule (controller-gen rbac).",
			Ignored: "RBAC rules of a controller; the server's own roles and the users' admin/edit/view roles are in config/deploy"},
		&Definition{Name: "kubebuilder:webhook", Target: OnPackage | OnType | OnField, Form: Raw,
			Help:    "An admission webhook of a controller (controller-gen webhook).",
			Ignored: "webhook configurations of a controller; an aggregated server validates and defaults itself (hooks.go)"},
		&Definition{Name: "kubebuilder:webhookconfiguration", Target: OnPackage | OnType | OnField, Form: Raw,
			Help:    "Names of a controller's webhook configurations (controller-gen webhook).",
			Ignored: "webhook configurations of a controller; an aggregated server validates and defaults itself (hooks.go)"},

		// Kind markers, client-gen's vocabulary.
		valued(&Definition{Name: "genclient", Target: OnType, Form: Flag,
			Help: "Serve this type as a kind and generate its typed client."}, flagOf[GenClient]()),
		valued(&Definition{Name: "genclient:nonNamespaced", Target: OnType, Form: Flag,
			Help: "The kind is cluster-scoped."}, flagOf[NonNamespaced]()),
		valued(&Definition{Name: "genclient:noStatus", Target: OnType, Form: Flag,
			Help: "Serve no /status subresource even though the kind has a Status field."}, flagOf[NoStatus]()),
		&Definition{Name: "genclient:noVerbs", Target: OnType, Form: Flag,
			Help: "Generate no client verbs (client-gen)."},
		valued(&Definition{Name: "genclient:readonly", Target: OnType, Form: Flag,
			Help: "The kind is read-only: the client has only get, list and watch (client-gen), and the server serves only those verbs " +
				"(discovery lists get, list, watch; writes are 405). With +aagen:backend the backend's methods decide the verbs instead; " +
				"without it nothing can create objects through the API (a warning says so)."}, flagOf[ReadOnly]()),
		&Definition{Name: "genclient:onlyVerbs", Target: OnType, Form: Value,
			Help: "Generate only these client verbs (client-gen)."},
		&Definition{Name: "genclient:skipVerbs", Target: OnType, Form: Value,
			Help: "Skip these client verbs (client-gen)."},
		&Definition{Name: "genclient:method", Target: OnType, Form: Value,
			Help: "Extra client method (client-gen syntax)."},

		// Kind markers, kubebuilder's vocabulary.
		valued(&Definition{Name: "kubebuilder:object:root", Target: OnType, Form: Flag,
			Help: "The type is a root object (a kind or a kind's List)."}, flagOf[ObjectRoot]()),
		valued(&Definition{Name: "kubebuilder:resource", Target: OnType, Form: Args,
			Keys: []string{"path", "scope", "shortName", "categories", "singular"},
			Help: "Resource names and scope: path=<plural>,scope=Namespaced|Cluster,shortName=a;b,categories=all;x,singular=<name>."}, parseResource),
		valued(&Definition{Name: "resourceName", Target: OnType, Form: Value,
			Help: "The kind's resource name, as client-gen reads it (k8s.io/metrics: +resourceName=pods on PodMetrics): the server serves it, and " +
				"the clientset, discovery, RBAC roles and API docs use it; the client's Go names stay the kind's plural (PodMetricses()). " +
				"Same as +kubebuilder:resource:path; when both are given they must agree."}, stringOf[ResourceName]()),
		valued(&Definition{Name: "kubebuilder:subresource:status", Target: OnType, Form: Flag,
			Help: "Serve the /status subresource."}, flagOf[StatusSubresource]()),
		valued(&Definition{Name: "kubebuilder:storageversion", Target: OnType, Form: Flag,
			Help: "Store this version of the kind (the hub) when the kind is defined in several versions: exactly one of them carries it. " +
				"Its Go type is the kind's internal version; the other versions convert to and from it (conversion-gen, plus your conversion.go)."}, flagOf[StorageVersion]()),
		valued(&Definition{Name: "kubebuilder:subresource:scale", Target: OnType, Form: Args,
			Keys: []string{"specpath", "statuspath", "selectorpath"},
			Help: "Serve /scale (autoscaling/v1 Scale, for kubectl scale and autoscalers): specpath=.spec.replicas (an int32 or *int32 under .spec), " +
				"statuspath=.status.replicas (an int32 under .status), optional selectorpath=.status.selector (a string: the label selector in string form)."}, parseScale),
		valued(&Definition{Name: "kubebuilder:printcolumn", Target: OnType, Form: Args,
			Keys: []string{"name", "type", "JSONPath", "description", "priority", "format"},
			Help: "A column of kubectl get, after NAME (repeatable, in order; as for a CRD, there is no AGE unless a column shows it): name=<header>, type=integer|number|string|boolean|date " +
				"(date shows an age), JSONPath=<.path> (CRD rules), optional description, priority=<n> (above 0: only with -o wide) and format."}, parsePrintColumn),
		valued(&Definition{Name: "kubebuilder:selectablefield", Target: OnType, Form: Args,
			Keys: []string{"JSONPath"},
			Help: "A field usable in --field-selector (repeatable): JSONPath=.spec.x names a string, integer or boolean field outside metadata; " +
				"metadata.name and metadata.namespace are always selectable."}, func(m Marker) (any, error) { return SelectableField{JSONPath: m.Args["JSONPath"]}, nil }),
		valued(&Definition{Name: "kubebuilder:deprecatedversion", Target: OnType, Form: Args,
			Keys: []string{"warning"},
			Help: "This version of the kind is deprecated: every request in it gets a Warning header (kubectl prints it), " +
				"warning=<text> or, like a CRD, \"<group>/<version> <Kind> is deprecated\"."}, func(m Marker) (any, error) { return DeprecatedVersion{Warning: m.Args["warning"]}, nil }),
		valued(&Definition{Name: "aagen:backend", Target: OnType, Form: Flag,
			Help: "Serve the kind from your own code instead of etcd: aagen creates, once, backend.go next to the kind's hooks.go with NewBackend, " +
				"which returns a runtime/backend Reader (get, list) that may also be a Watcher (watch), a Writer (create, update, delete) and a Starter " +
				"(started with a loopback client). Discovery lists exactly the verbs it implements; other verbs are 405. No /status or /scale. " +
				"For a published package you do not edit, `aagen generate --backend <Kind>.<group>` does the same."}, flagOf[Backend]()),
		valued(&Definition{Name: "kubebuilder:unservedversion", Target: OnType, Form: Flag,
			Help: "Do not serve this version of the kind (not installed, not in discovery, no client); objects still convert to and from it."}, flagOf[UnservedVersion]()),
		&Definition{Name: "kubebuilder:metadata", Target: OnType, Form: Args, Keys: []string{"annotations", "labels"},
			Help:    "Labels and annotations of the generated CustomResourceDefinition object (controller-gen).",
			Ignored: "metadata of a CRD object; an aggregated API has none (label the APIServices in config/deploy instead)"},
		&Definition{Name: "kubebuilder:title", Target: OnType | OnField, Form: Value, Type: LiteralValue,
			Help:    "The schema's title (controller-gen).",
			Ignored: "documentation only; the doc comment is the schema's description"},
		&Definition{Name: "kubebuilder:example", Target: OnType | OnField, Form: Value, Type: LiteralValue,
			Help:    "An example value in the schema (controller-gen).",
			Ignored: "documentation only; put examples in the doc comment or config/samples"},
		&Definition{Name: "kubebuilder:externalDocs", Target: OnType | OnField, Form: Args, Keys: []string{"url", "description"},
			Help:    "A link to external documentation in the schema (controller-gen).",
			Ignored: "documentation only; link it from the doc comment"},

		// Imperative subresources (see generator/model/subresources.go and runtime/subresource).
		valued(&Definition{Name: "aagen:subresource:action", Target: OnType, Form: Args,
			Keys: []string{"name", "input", "output"},
			Help: "An action, POST <plural>/<name>/<sub> like pods/eviction (repeatable): name=<sub>, input=<type of the body>, optional output=<type of the answer> " +
				"(default: the kind; Status for a metav1.Status). The types are structs of the same package with metav1.TypeMeta. " +
				"You implement Hooks.<Name> in pkg/registry/<group>/<kind>/subresource_<sub>.go; the client gets <Name>; roles: edit (create)."}, parseSubresource("action")),
		valued(&Definition{Name: "aagen:subresource:view", Target: OnType, Form: Args,
			Keys: []string{"name", "type", "update"},
			Help: "A view, GET <plural>/<name>/<sub> answering another representation of the object like /scale (repeatable): name=<sub>, type=<view type, " +
				"a struct of the same package with metav1.TypeMeta>, update=true to take PUT and PATCH too. You implement Hooks.Get<Name> (and Set<Name>); " +
				"the client gets Get<Name> (and Update<Name>); roles: view (get), edit (update, patch)."}, parseSubresource("view")),
		valued(&Definition{Name: "aagen:subresource:stream", Target: OnType, Form: Args,
			Keys: []string{"name"},
			Help: "A stream, GET <plural>/<name>/<sub>[?follow=true] answering chunked text as it is written, like pods/log (repeatable): name=<sub>. " +
				"You implement Hooks.Stream<Name>; roles: view (get). A name other than those kube-apiserver treats as long-running " +
				"(attach, exec, log, portforward, proxy) gets a warning: kube-apiserver would apply its request timeout."}, parseSubresource("stream")),
		valued(&Definition{Name: "aagen:subresource:connection", Target: OnType, Form: Args,
			Keys: []string{"name"},
			Help: "A connection, an upgraded bidirectional stream on <plural>/<name>/<sub> like pods/attach, in the websocket protocol v5.channel.k8s.io " +
				"of kubectl and client-go's websocket executor (repeatable): name=<sub>. You implement Hooks.Connect<Name>; roles: edit (get, create, as pods/exec). " +
				"Same naming advice as for streams."}, parseSubresource("connection")),

		// Validation and defaulting (see generator/model/validation.go): the markers become the
		// kind's OpenAPI schema, which the server validates every write against like a CRD's.
		valued(typed("kubebuilder:default", LiteralValue, "Default value in controller-tools' literal syntax or as JSON, read as the field's type: 3, true, Wood or \"Wood\" (a string), "+
			"{a,b} or [\"a\",\"b\"] (a list), {from: Same} or {\"from\":\"Same\"} (an object), {} (empty). Set on create and when an object without the field is read from storage. "+
			"A field that is not a pointer, with or without omitempty, is defaulted when it holds its zero value (defaulter-gen's check): an absent field gets the default "+
			"as in a CRD, and so does the zero value sent explicitly, which a CRD keeps (an observation of defaulter-gen's generated code); a defaulted field is "+
			"published as optional (a body may leave it out). A non-pointer struct field takes only {} (its fields' defaults always apply); another default there "+
			"is a warning and is not applied."), parseDefault),
		valued(typed("default", LiteralValue, "Same as +kubebuilder:default (code-generator's and kube-openapi's spelling); +kubebuilder:default wins when both are given."), parseDefault),
		valued(&Definition{Name: "kubebuilder:validation:Required", Target: OnPackage | OnField | OnType, Form: Flag,
			Help: "The field must be present (listed in the schema's required). Next to +optional (or +k8s:optional) it wins, with a warning, as in controller-gen. On a package (controller-gen: every field required by default) it is a warning: not applied yet."}, flagOf[Required]()),
		valued(&Definition{Name: "kubebuilder:validation:Optional", Target: OnPackage | OnField | OnType, Form: Flag,
			Help: "The field may be left out. Next to +required (or +k8s:required) it wins, with a warning, as in controller-gen. On a package (controller-gen: every field optional by default) aagen's default already is: optional with omitempty."}, flagOf[Optional]()),
		valued(alias(field("required", Flag, "Same as +kubebuilder:validation:Required."), "kubebuilder:validation:Required"), flagOf[Required]()),
		valued(alias(field("optional", Flag, "Same as +kubebuilder:validation:Optional."), "kubebuilder:validation:Optional"), flagOf[Optional]()),
		valued(alias(field("k8s:required", Flag, "Same as +kubebuilder:validation:Required (k8s.io/api's declarative validation spelling)."), "kubebuilder:validation:Required"), flagOf[Required]()),
		valued(alias(field("k8s:optional", Flag, "Same as +kubebuilder:validation:Optional (k8s.io/api's declarative validation spelling)."), "kubebuilder:validation:Optional"), flagOf[Optional]()),
		valued(field("k8s:immutable", Flag, "The field cannot change once set: the CEL rule self == oldSelf with message \"field is immutable\", as controller-gen writes it."), flagOf[Immutable]()),
		valued(typed("kubebuilder:validation:Minimum", Number, "Minimum of a number."), numberOf[Minimum]()),
		valued(typed("kubebuilder:validation:Maximum", Number, "Maximum of a number."), numberOf[Maximum]()),
		valued(alias(typed("k8s:minimum", Number, "Same as +kubebuilder:validation:Minimum (k8s.io/api's declarative validation spelling)."), "kubebuilder:validation:Minimum"), numberOf[Minimum]()),
		valued(alias(typed("k8s:maximum", Number, "Same as +kubebuilder:validation:Maximum (k8s.io/api's declarative validation spelling)."), "kubebuilder:validation:Maximum"), numberOf[Maximum]()),
		valued(field("kubebuilder:validation:ExclusiveMinimum", Flag, "The minimum itself is not allowed."), flagOf[ExclusiveMinimum]()),
		valued(field("kubebuilder:validation:ExclusiveMaximum", Flag, "The maximum itself is not allowed."), flagOf[ExclusiveMaximum]()),
		valued(typed("kubebuilder:validation:MultipleOf", Number, "The number must be a multiple of this."), parseMultipleOf),
		valued(typed("kubebuilder:validation:MinLength", Integer, "Minimum string length."), countOf[MinLength]()),
		valued(typed("kubebuilder:validation:MaxLength", Integer, "Maximum string length."), countOf[MaxLength]()),
		valued(alias(typed("k8s:maxLength", Integer, "Same as +kubebuilder:validation:MaxLength (k8s.io/api's declarative validation spelling)."), "kubebuilder:validation:MaxLength"), countOf[MaxLength]()),
		valued(typed("kubebuilder:validation:Pattern", String, "Regular expression (RE2) the string must match; quote it when it has commas."), parsePattern),
		valued(typed("kubebuilder:validation:Format", String, "String format a CRD validates: date-time, date, duration, email, uri, hostname, ipv4, ipv6, cidr, mac, uuid, byte, ..."), parseFormat),
		valued(typed("kubebuilder:validation:Enum", StringList, "Allowed values, separated by ';' (scalars only)."), stringsOf[Enum]()),
		valued(typed("kubebuilder:validation:MinItems", Integer, "Minimum list length."), countOf[MinItems]()),
		valued(typed("kubebuilder:validation:MaxItems", Integer, "Maximum list length."), countOf[MaxItems]()),
		valued(alias(typed("k8s:maxItems", Integer, "Same as +kubebuilder:validation:MaxItems (k8s.io/api's declarative validation spelling)."), "kubebuilder:validation:MaxItems"), countOf[MaxItems]()),
		valued(&Definition{Name: "kubebuilder:validation:UniqueItems", Target: OnField | OnType, Form: Value,
			Help: "Rejected like in a CRD (quadratic cost): use +listType=set, which checks uniqueness in linear time."}, parseUniqueItems),
		valued(typed("kubebuilder:validation:MinProperties", Integer, "Minimum number of map entries or object fields."), countOf[MinProperties]()),
		valued(typed("kubebuilder:validation:MaxProperties", Integer, "Maximum number of map entries or object fields."), countOf[MaxProperties]()),
		valued(&Definition{Name: "kubebuilder:validation:ExactlyOneOf", Target: OnType, Form: Value, Type: StringList,
			Help: "Exactly one of these fields (JSON names, a;b) must be set: the CEL rule controller-gen writes, with its message. Repeatable."}, stringsOf[ExactlyOneOf]()),
		valued(&Definition{Name: "kubebuilder:validation:AtMostOneOf", Target: OnType, Form: Value, Type: StringList,
			Help: "At most one of these fields (JSON names, a;b) may be set: the CEL rule controller-gen writes, with its message. Repeatable."}, stringsOf[AtMostOneOf]()),
		valued(&Definition{Name: "kubebuilder:validation:AtLeastOneOf", Target: OnType, Form: Value, Type: StringList,
			Help: "At least one of these fields (JSON names, a;b) must be set: the CEL rule controller-gen writes, with its message. Repeatable."}, stringsOf[AtLeastOneOf]()),
		valued(&Definition{Name: "kubebuilder:validation:XValidation", Target: OnType | OnField, Form: Args,
			Keys: []string{"rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"},
			Help: "A CEL rule, evaluated like a CRD's x-kubernetes-validations (self; oldSelf on update for transition rules): " +
				"rule=<CEL>, message or messageExpression, reason=FieldValueInvalid|FieldValueForbidden|FieldValueRequired|FieldValueDuplicate, fieldPath=.x. Repeatable."}, parseRule),
		pending("kubebuilder:validation:Type", Value, "Override the OpenAPI type.",
			"the schema's type comes from the Go type (kube-openapi); overriding it would publish a schema the server does not decode"),
		pending("kubebuilder:validation:XIntOrString", Flag, "The field is an int or a string.",
			"use intstr.IntOrString, whose schema already is int-or-string"),
		valued(field("kubebuilder:validation:EmbeddedResource", Flag, "The runtime.RawExtension field holds a Kubernetes object: like a CRD's "+
			"x-kubernetes-embedded-resource, apiVersion and kind are required and checked, metadata is validated as an object's metadata and "+
			"pruned to its fields (silently: a CRD warns about the dropped fields, or refuses them under fieldValidation=Strict). "+
			"On another type it is an error (a Go struct keeps only its own fields)."), flagOf[EmbeddedResource]()),
		valued(alias(field("kubebuilder:validation:XEmbeddedResource", Flag, "Same as +kubebuilder:validation:EmbeddedResource."), "kubebuilder:validation:EmbeddedResource"), flagOf[EmbeddedResource]()),
		valued(field("kubebuilder:pruning:PreserveUnknownFields", Flag, "Keep unknown fields: what a runtime.RawExtension field does anyway "+
			"(any JSON object is stored as sent; published as x-kubernetes-preserve-unknown-fields, as controller-gen writes it for RawExtension). "+
			"On a struct, a map or a type it is an error: Go types keep only the fields they declare, so use runtime.RawExtension."), flagOf[PreserveUnknownFields]()),
		valued(alias(field("kubebuilder:validation:XPreserveUnknownFields", Flag, "Same as +kubebuilder:pruning:PreserveUnknownFields."), "kubebuilder:pruning:PreserveUnknownFields"), flagOf[PreserveUnknownFields]()),
		pending("kubebuilder:validation:Schemaless", Flag, "The field has no schema.",
			"use runtime.RawExtension or apiextensions' JSON for free-form data"),
		&Definition{Name: "nullable", Target: OnField | OnType, Form: Flag,
			Help:    "null is a value of the field (controller-gen).",
			Ignored: "a Go field holds no null: null on input clears the field and it is left out (omitempty), as a CRD prunes a null it does not allow"},
	)
	defs = append(defs, itemsMarkers(defs)...)
	defs = append(defs, otherTools()...)
	r := NewRegistry(owned, defs...)
	r.toolOwned = toolOwned
	return r
}

// ItemsPrefix starts controller-gen's markers that constrain each item of a list
// (+kubebuilder:validation:items:MaxLength=3): the validation marker named by the rest.
const ItemsPrefix = "kubebuilder:validation:items:"

// itemsMarkers are controller-gen's +kubebuilder:validation:items:* markers: each
// validation marker among defs, applied to the items of a list, with the same syntax.
func itemsMarkers(defs []*Definition) []*Definition {
	byName := map[string]*Definition{}
	for _, d := range defs {
		byName[d.Name] = d
	}
	var out []*Definition
	for _, n := range []string{"Minimum", "Maximum", "ExclusiveMinimum", "ExclusiveMaximum", "MultipleOf", "MinLength", "MaxLength", "Pattern",
		"Format", "Enum", "MinItems", "MaxItems", "UniqueItems", "MinProperties", "MaxProperties", "Type", "XPreserveUnknownFields",
		"XEmbeddedResource", "XIntOrString", "XValidation"} {
		base := byName["kubebuilder:validation:"+n]
		d := &Definition{Name: ItemsPrefix + n, Target: OnField | OnType, Form: Flag, Help: "+kubebuilder:validation:" + n + " for each item of the list."}
		if base != nil {
			d.Form, d.Type, d.Keys, d.Pending = base.Form, base.Type, base.Keys, base.Pending
			if base.Parse != nil {
				d.Parse = itemsOf(base.Parse)
			}
		}
		switch n {
		case "Format", "Enum":
			d.Pending = "enum and format of list items are not published or checked yet; give the items a named type and mark that type"
		case "XValidation":
			d.Pending = "CEL rules on list items are not applied yet; give the items a named struct type and put the rule on it"
		case "Type", "XPreserveUnknownFields", "XEmbeddedResource", "XIntOrString":
			d.Form = Flag
			if n == "Type" {
				d.Form = Value
			}
			d.Pending = "the items' schema comes from their Go type"
		}
		if d.Pending != "" {
			d.Parse = nil
		}
		out = append(out, d)
	}
	return out
}

// otherTools are the markers of code-generator, kube-openapi and k8s.io/api's own types
// that aagen recognises: applied by the generator that reads them from the comments, or
// ignored because they concern what an aggregated server does not have. Markers of
// other tools not listed here pass through untouched all the same.
func otherTools() []*Definition {
	raw := func(name, help, ignored string) *Definition {
		return &Definition{Name: name, Target: OnPackage | OnType | OnField, Form: Raw, Help: help, Ignored: ignored}
	}
	const byTool = "read from the comment by the code generator named (aagen runs it)"
	return []*Definition{
		valued(raw("listType", "atomic, set or map: how server-side apply merges the list, published as x-kubernetes-list-type and checked (set, map keys) like a CRD (kube-openapi).", ""), choiceOf("atomic", "set", "map")),
		raw("listMapKey", "A key field of a +listType=map list (repeatable; kube-openapi).", ""),
		valued(raw("mapType", "atomic or granular: how server-side apply merges the map (kube-openapi).", ""), choiceOf("atomic", "granular")),
		valued(raw("structType", "atomic or granular: how server-side apply merges the struct (kube-openapi).", ""), choiceOf("atomic", "granular")),
		valued(raw("k8s:listType", "Same as +listType (k8s.io/api's declarative validation spelling).", "declarative validation (validation-gen) is not run; use +listType, which kube-openapi publishes"), choiceOf("atomic", "set", "map")),
		raw("k8s:listMapKey", "Same as +listMapKey (k8s.io/api's declarative validation spelling).", "declarative validation (validation-gen) is not run; use +listMapKey, which kube-openapi publishes"),
		raw("patchStrategy", "Strategic merge patch strategy of the field (kube-openapi publishes it as x-kubernetes-patch-strategy). Strategic merge patch reads the patchStrategy struct tag: a marker that differs from it is a warning, and the tag is published.", ""),
		raw("patchMergeKey", "Strategic merge patch key of a list (kube-openapi publishes it as x-kubernetes-patch-merge-key). Strategic merge patch reads the one patchMergeKey struct tag: a marker that differs from it, or several, is a warning, and the tag is published.", ""),
		valued(&Definition{Name: "enum", Target: OnType, Form: Flag,
			Help: "The named string type is an enum of its constants: documentation, as for kube-apiserver's built-in types. The OpenAPI definitions publish the constants as the enum; the server does not check them, as a CRD of the same types does not (controller-gen ignores +enum). " +
				"Next to +kubebuilder:validation:Enum the two must list the same values (one enum, then checked); different values are an error."}, flagOf[OpenAPIEnum]()),
		valued(alias(&Definition{Name: "k8s:enum", Target: OnType, Form: Flag, Help: "Same as +enum (declarative validation spelling)."}, "enum"), flagOf[OpenAPIEnum]()),
		raw("protobuf", "Protocol buffer generation (go-to-protobuf).", "aagen writes the protobuf methods itself (docs/protobuf.md) and takes field numbers from `protobuf:\"...\"` struct tags; go-to-protobuf's +protobuf markers are not read"),
		raw("k8s:protobuf-gen", "Protocol buffer generation (go-to-protobuf).", "aagen writes protobuf methods for every package whose fields protobuf can carry (docs/protobuf.md)"),
		raw("k8s:openapi-gen", "kube-openapi's switch and extensions (x-kubernetes-...).", byTool),
		raw("k8s:openapi-model-package", "kube-openapi's model package name.", byTool),
		raw("k8s:deepcopy-gen", "deepcopy-gen's switch and interfaces.", byTool),
		raw("k8s:conversion-gen", "conversion-gen's peer packages and switches.", byTool),
		raw("k8s:defaulter-gen", "defaulter-gen's switch.", byTool),
		raw("k8s:prerelease-lifecycle-gen", "API lifecycle (introduced, deprecated, removed, replacement) of built-in Kubernetes types.",
			"lifecycle of built-in Kubernetes APIs; mark deprecated versions with +kubebuilder:deprecatedversion"),
		raw("k8s:validation-gen", "Declarative validation of built-in Kubernetes types (validation-gen).", "declarative validation (validation-gen) is not run; write +kubebuilder:validation markers"),
		raw("k8s:format", "A declarative validation format (k8s-short-name, ...).", "declarative validation formats are not run; use +kubebuilder:validation:Format or Pattern"),
		raw("k8s:alpha", "Declarative validation gated as alpha.", "declarative validation (validation-gen) is not run"),
		raw("k8s:beta", "Declarative validation gated as beta.", "declarative validation (validation-gen) is not run"),
		raw("featureGate", "The field is gated by a Kubernetes feature gate.", "feature gates of built-in Kubernetes APIs"),
		raw("k8s:supportsSubresource", "Declarative validation of a subresource.", "declarative validation (validation-gen) is not run"),
	}
}

// valued gives d the parser of its value: a Go value of a type of d's own.
func valued(d *Definition, parse func(Marker) (any, error)) *Definition {
	d.Parse = parse
	return d
}

func field(name string, form Form, help string) *Definition {
	return &Definition{Name: name, Target: OnField | OnType, Form: form, Help: help}
}

// alias makes d another spelling of the marker named same.
func alias(d *Definition, same string) *Definition {
	d.Same = same
	return d
}

// typed is a Value marker on fields and types whose value has type t.
func typed(name string, t ValueType, help string) *Definition {
	return &Definition{Name: name, Target: OnField | OnType, Form: Value, Type: t, Help: help}
}

func pending(name string, form Form, help, why string) *Definition {
	return &Definition{Name: name, Target: OnField | OnType, Form: form, Help: help, Pending: why}
}
