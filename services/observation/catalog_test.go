package observation_test

import (
	"testing"

	"github.com/sensorgate/sensorgate/services/adapters/airnow"
	"github.com/sensorgate/sensorgate/services/adapters/ambient"
	"github.com/sensorgate/sensorgate/services/adapters/coops"
	"github.com/sensorgate/sensorgate/services/adapters/davis"
	"github.com/sensorgate/sensorgate/services/adapters/metar"
	"github.com/sensorgate/sensorgate/services/adapters/ndbc"
	"github.com/sensorgate/sensorgate/services/adapters/nws"
	"github.com/sensorgate/sensorgate/services/adapters/openaq"
	"github.com/sensorgate/sensorgate/services/observation"
)

// TestAdapterCatalogsAgreeWithTheirPackages checks each adapter's catalog.json against the
// slugs its code writes on stations and batches.
func TestAdapterCatalogsAgreeWithTheirPackages(t *testing.T) {
	for _, c := range []struct {
		name, provider, feed string
		adapter              observation.Adapter
	}{
		{"airnow", airnow.ProviderSlug, airnow.FeedSlug, airnow.Adapter()},
		{"ambient", ambient.ProviderSlug, ambient.FeedSlug, ambient.Adapter()},
		{"coops", coops.ProviderSlug, coops.FeedSlug, coops.Adapter()},
		{"davis", davis.ProviderSlug, davis.FeedSlug, davis.Adapter()},
		{"metar", metar.ProviderSlug, metar.FeedSlug, metar.Adapter()},
		{"ndbc", ndbc.ProviderSlug, ndbc.FeedSlug, ndbc.Adapter()},
		{"nws", nws.ProviderSlug, nws.FeedSlug, nws.Adapter()},
		{"openaq", openaq.ProviderSlug, openaq.FeedSlug, openaq.Adapter()},
	} {
		a := c.adapter
		if a.Name != c.name || a.Provider.Slug != c.provider || len(a.Feeds) != 1 || a.Feeds[0].Slug != c.feed {
			t.Errorf("%s: catalog declares adapter %q, provider %q, feeds %+v; the package writes provider %q, feed %q",
				c.name, a.Name, a.Provider.Slug, a.Feeds, c.provider, c.feed)
			continue
		}
		f := a.Feeds[0]
		if f.ProviderSlug != c.provider || f.Domain == "" || f.TemporalPattern == "" || f.FeedType == "" || a.Provider.Name == "" || a.Provider.License == "" {
			t.Errorf("%s: catalog incomplete: %+v %+v", c.name, a.Provider, f)
		}
	}
}

func TestDeclareRefusesAnUnreadableCatalog(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Declare accepted a catalog without a provider")
		}
	}()
	observation.Declare([]byte(`{"adapter":"x","feeds":[]}`), nil, nil)
}
