package model

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"slices"

	"golang.org/x/tools/go/packages"

	"github.com/aagen-dev/aagen/generator/load"
)

const (
	pkgRuntimePath = "k8s.io/apimachinery/pkg/runtime"
	pkgSchemaPath  = "k8s.io/apimachinery/pkg/runtime/schema"
)

// Declares reports whether the package declares the registration identifier name itself.
func (v *Version) Declares(name string) bool { return slices.Contains(v.Declared, name) }

// OwnRegistration reports whether the package registers its kinds itself, declaring
// AddToScheme (upstream's SchemeBuilder with addKnownTypes, or kubebuilder's, filled by
// SchemeBuilder.Register in init): aagen then generates no AddToScheme, and the server
// calls the package's own, as it calls the generated one elsewhere.
func (v *Version) OwnRegistration() bool { return v.Declares("AddToScheme") }

// registration finds the registration identifiers p declares itself (upstream's register.go:
// GroupName, SchemeGroupVersion, SchemeBuilder, localSchemeBuilder, AddToScheme, Kind,
// Resource; kubebuilder's groupversion_info.go: SchemeBuilder, AddToScheme; or a type of
// its own named Kind or Resource) and checks that those the generated server and
// code-generator's files use have the shape they need. It returns the declared names
// and whether they are usable.
func (b *builder) registration(p *packages.Package, group string) ([]string, bool) {
	var declared []string
	ok := true
	for _, name := range load.RegistrationNames() {
		obj := p.Types.Scope().Lookup(name)
		if obj == nil {
			continue
		}
		declared = append(declared, name)
		pos := p.Fset.Position(obj.Pos())
		switch name {
		case "GroupName":
			if val, isString := groupNameValue(p, obj); !isString || val != group {
				b.errorf(pos, "declare `const GroupName = \""+group+"\"` (or `var GroupName = \""+group+"\"`, the package's +groupName), or delete it: aagen then generates it",
					"package %s declares GroupName, but not as a string constant or variable initialized to %q, its +groupName", p.Name, group)
				ok = false
			}
		case "SchemeGroupVersion":
			if _, isVar := obj.(*types.Var); !isVar || !IsNamed(obj.Type(), pkgSchemaPath, "GroupVersion") {
				b.errorf(pos, "declare `var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: \""+p.Name+"\"}`, or delete it: aagen then generates it",
					"package %s declares SchemeGroupVersion, but not as a variable of type schema.GroupVersion (the generated server registers the version with it)", p.Name)
				ok = false
			} else if g, known := groupVersionGroup(p, obj); known && g != group {
				// The package's own AddToScheme and client-gen's clients use
				// SchemeGroupVersion; the server, the discovery and the APIService use
				// +groupName: the two must agree.
				b.errorf(pos, "make SchemeGroupVersion's group and the package's +groupName the same: the group the API is served in",
					"package %s registers its kinds in group %q (SchemeGroupVersion), but its +groupName is %s: its own clients and scheme would use one group and the server another", p.Name, g, group)
				ok = false
			}
		case "AddToScheme":
			if !isAddToScheme(obj) {
				b.errorf(pos, "declare `AddToScheme = SchemeBuilder.AddToScheme` (a func(*runtime.Scheme) error), or delete it: aagen then generates it",
					"package %s declares AddToScheme, but not as a func(*runtime.Scheme) error (the generated server calls it to register the package's kinds)", p.Name)
				ok = false
			}
		case "localSchemeBuilder":
			t := obj.Type()
			if ptr, isPtr := t.(*types.Pointer); isPtr {
				t = ptr.Elem()
			}
			if _, isVar := obj.(*types.Var); !isVar || !IsNamed(t, pkgRuntimePath, "SchemeBuilder") {
				b.errorf(pos, "declare `localSchemeBuilder = &SchemeBuilder` with `SchemeBuilder runtime.SchemeBuilder` (upstream's register.go), or rename it",
					"package %s declares localSchemeBuilder, but not as a runtime.SchemeBuilder (or a pointer to one), where conversion-gen's generated init registers the conversions", p.Name)
				ok = false
			}
		}
	}
	return declared, ok
}

// isAddToScheme reports whether obj is a function or function variable of type
// func(*runtime.Scheme) error.
func isAddToScheme(obj types.Object) bool {
	switch obj.(type) {
	case *types.Var, *types.Func:
	default:
		return false
	}
	sig, ok := obj.Type().Underlying().(*types.Signature)
	if !ok || sig.Params().Len() != 1 || sig.Results().Len() != 1 || sig.Variadic() {
		return false
	}
	ptr, ok := sig.Params().At(0).Type().(*types.Pointer)
	return ok && IsNamed(ptr.Elem(), pkgRuntimePath, "Scheme") && types.Identical(sig.Results().At(0).Type(), types.Universe.Lookup("error").Type())
}

// groupVersionGroup returns the Group of the package's SchemeGroupVersion when its
// initializer is a schema.GroupVersion literal whose group is a constant string
// (schema.GroupVersion{Group: "x", ...}, or a constant's name); known is false otherwise.
func groupVersionGroup(p *packages.Package, obj types.Object) (group string, known bool) {
	lit, ok := varInit(p, obj).(*ast.CompositeLit)
	if !ok || p.TypesInfo == nil {
		return "", false
	}
	for i, e := range lit.Elts {
		value := e
		if kv, isKV := e.(*ast.KeyValueExpr); isKV {
			if id, isIdent := kv.Key.(*ast.Ident); !isIdent || id.Name != "Group" {
				continue
			}
			value = kv.Value
		} else if i != 0 {
			continue
		}
		if tv, found := p.TypesInfo.Types[value]; found && tv.Value != nil && tv.Value.Kind() == constant.String {
			return constant.StringVal(tv.Value), true
		}
		return "", false
	}
	return "", false
}

// varInit returns the initializer of the package-level variable obj, or nil.
func varInit(p *packages.Package, obj types.Object) ast.Expr {
	if p.TypesInfo == nil {
		return nil
	}
	for _, f := range p.Syntax {
		for _, d := range f.Decls {
			gd, isGen := d.(*ast.GenDecl)
			if !isGen || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if p.TypesInfo.Defs[name] == obj && i < len(vs.Values) {
						return vs.Values[i]
					}
				}
			}
		}
	}
	return nil
}

// groupNameValue returns the value of the package's GroupName when it is a string constant
// (`const GroupName = "x"`) or a string variable initialized with a constant
// (`var GroupName = "x"`, as openshift/api declares it); the generated registration uses
// it only as a value, which both are.
func groupNameValue(p *packages.Package, obj types.Object) (string, bool) {
	switch obj := obj.(type) {
	case *types.Const:
		if obj.Val().Kind() == constant.String {
			return constant.StringVal(obj.Val()), true
		}
	case *types.Var:
		if !types.Identical(obj.Type(), types.Typ[types.String]) {
			return "", false
		}
		if init := varInit(p, obj); init != nil {
			if tv, found := p.TypesInfo.Types[init]; found && tv.Value != nil && tv.Value.Kind() == constant.String {
				return constant.StringVal(tv.Value), true
			}
		}
	}
	return "", false
}
