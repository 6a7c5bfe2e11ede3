package main

import (
	"context"
	"fmt"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// noLoader is the schema loader for a package that refers to no other package. Pulumi's
// own loader would start plugins; a reference to another package is an error here instead.
type noLoader struct{}

var _ schema.ReferenceLoader = noLoader{}

func (noLoader) LoadPackage(pkg string, _ *semver.Version) (*schema.Package, error) {
	return nil, refused(pkg)
}

func (noLoader) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, refused(d.Name)
}

func (noLoader) LoadPackageReference(pkg string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, refused(pkg)
}

func (noLoader) LoadPackageReferenceV2(_ context.Context, d *schema.PackageDescriptor) (schema.PackageReference, error) {
	return nil, refused(d.Name)
}

func refused(pkg string) error {
	return fmt.Errorf("the schema refers to package %q; gen/sdkgen generates self-contained packages only", pkg)
}
