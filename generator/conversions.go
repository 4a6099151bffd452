package generator

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/aagen-dev/aagen/generator/codegen"
	"github.com/aagen-dev/aagen/generator/emit"
	"github.com/aagen-dev/aagen/generator/model"
)

// conversions finds, in the conversions conversion-gen wrote, the functions it could not
// write (fields that differ between a version and its hub). It creates the
// version's user-owned conversion.go with stubs for them when the file does not exist yet,
// and warns about each one either way: the server does not build until they are written.
func conversions(m *model.Model, files []codegen.File) ([]emit.File, []model.Diagnostic, error) {
	var out []emit.File
	var warns []model.Diagnostic
	for _, g := range m.Groups {
		for _, v := range g.Versions {
			if v.ConvertTo == nil {
				continue
			}
			rel := m.RelPath(v.Dir)
			var generated []byte
			for _, f := range files {
				if f.Path == path.Join(rel, "zz_generated.conversion.go") {
					generated = f.Content
				}
			}
			if generated == nil {
				continue
			}
			missing, err := emit.MissingConversions(v, generated)
			if err != nil || len(missing) == 0 {
				if err != nil {
					return nil, nil, err
				}
				continue
			}
			userFile := path.Join(rel, emit.ConversionFileName)
			fix := "write them in " + userFile + " (yours; each starts from the generated autoConvert_ function)"
			if _, err := os.Stat(filepath.Join(m.ModuleDir, filepath.FromSlash(userFile))); os.IsNotExist(err) {
				f, err := emit.ConversionFile(m, v, missing)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, f)
				fix = "this run created " + userFile + " with a stub for each: convert the fields named there and delete each " + emit.ConversionTODO + " line"
			}
			for _, mc := range missing {
				msg := fmt.Sprintf("%s: conversion-gen cannot write %s", v.GroupVersion(), mc.Name)
				if len(mc.Fields) > 0 {
					msg += " (" + strings.Join(mc.Fields, "; ") + ")"
				}
				msg += "; the server does not build until it is written by hand"
				pos, fix := v.Pos, fix
				if mc.Stub.IsValid() {
					// The stub is there but unfinished: point at its TODO line.
					pos = mc.Stub
					msg = fmt.Sprintf("%s: %s is still the stub aagen created", v.GroupVersion(), mc.Name)
					if len(mc.Fields) > 0 {
						msg += " (" + strings.Join(mc.Fields, "; ") + ")"
					}
					msg += "; the server does not build until it is written"
					fix = "convert the fields named above the line, then delete the " + emit.ConversionTODO + " line"
				}
				warns = append(warns, model.Diagnostic{Pos: pos, Warning: true, Msg: msg, Fix: fix})
			}
		}
	}
	return out, warns, nil
}
