// Package bench loads a large synthetic catalog of realistic shape into PostgreSQL fast
// (COPY, indexes built after the load) and holds the benchmarks of the catalog list
// queries, at the store level and through the whole HTTP stack.
package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// A synthetic catalog mixes three services in realistic proportions: names drawn from
// place and feature words (so a word search matches a few percent), data types by
// service, 60 % of positions clustered around real cities (so a 50 km radius finds
// something), 38 % spread over the globe, 2 % without a position.

var places = strings.Fields(`Cedar Willow Granite Maple Aspen Falcon Heron Osprey Pelican Cypress Juniper Sable
Copper Silver Amber Coral Indigo Scarlet Ivory Onyx Harbor Mariner Anchor Beacon Lantern Compass Drift Tide
Summit Canyon Prairie Meadow Glacier Tundra Delta Estuary Lagoon Reef Atoll Fjord Sound Strait Cape Isle Key
North South East West Upper Lower Old New Grand Little Great Lake River Creek Spring Brook Pine Oak Elm Birch
Alder Hawthorn Hickory Magnolia Poplar Redwood Sequoia Spruce Tamarack Walnut Yew Laurel Myrtle Rowan Sorrel
Thistle Clover Fern Moss Sage Basil Mint Rosemary Saffron Ginger Pepper Nutmeg Clove Vanilla Cocoa Coffee Tea`)

var features = strings.Fields(`Point Bay Ridge Shoal Bank Channel Inlet Basin Ledge Bluff Crossing Landing Field
Airport Station Heights Valley Flats Marsh Dunes Narrows Rock Island Hill Park Bridge Pier Wharf Gate Tower`)

type serviceShape struct {
	id, provider, providerName, feed, feedName, sensorType, idPrefix string
	share                                                            float64
	dataTypes                                                        [][]string
}

var shapes = []serviceShape{
	{"ocean", "noaa-ndbc", "NOAA National Data Buoy Center", "ndbc-stdmet", "NDBC standard meteorological data", "buoy", "B", 0.30,
		[][]string{{"wave_height_m", "water_temperature_c", "wind_speed_ms", "air_pressure_hpa"}, {"water_temperature_c", "air_temperature_c"}, {"wave_height_m", "wind_speed_ms", "wind_direction_deg"}}},
	{"weather", "noaa-nws", "NOAA National Weather Service", "nws-observations", "NWS station observations", "weather_station", "K", 0.40,
		[][]string{{"air_temperature_c", "wind_speed_ms", "wind_direction_deg", "air_pressure_hpa", "relative_humidity_percent"}, {"air_temperature_c", "relative_humidity_percent"}}},
	{"airquality", "openaq", "OpenAQ", "openaq-locations", "OpenAQ locations", "air_quality_monitor", "Q", 0.30,
		[][]string{{"pm2_5_ug_per_m3", "pm10_ug_per_m3", "aqi"}, {"pm2_5_ug_per_m3", "ozone_ppb", "aqi"}, {"ozone_ppb"}}},
}

// cities are the cluster centres of the clustered positions.
var cities = [][2]float64{
	{39.99, -82.88}, {40.71, -74.01}, {34.05, -118.24}, {41.88, -87.63}, {29.76, -95.37}, {47.61, -122.33},
	{25.76, -80.19}, {51.51, -0.13}, {48.86, 2.35}, {52.52, 13.40}, {35.68, 139.69}, {31.23, 121.47},
	{28.61, 77.21}, {-23.55, -46.63}, {-33.87, 151.21}, {19.43, -99.13}, {55.76, 37.62}, {-17.75, 177.44},
	{51.88, -176.65}, {1.35, 103.82},
}

// Result is what Load wrote.
type Result struct {
	Sensors  int
	Duration time.Duration
}

// Load adds n synthetic sensors to the catalog of s (which must run on PostgreSQL at
// databaseURL): providers and projects through Sync, sensors with COPY, with the sensors'
// secondary indexes dropped during the copy and rebuilt after it, then VACUUM ANALYZE.
func Load(ctx context.Context, s *store.Store, databaseURL string, n int, seed uint64) (Result, error) {
	start := time.Now()
	if !s.Postgres() {
		return Result{}, fmt.Errorf("bench: Load needs PostgreSQL")
	}
	for _, sh := range shapes {
		_, err := s.Sync(ctx, catalog.SyncBatch{
			Service:   catalog.Service{ID: sh.id, Name: sh.id, Status: catalog.StatusActive},
			Providers: []catalog.Provider{{Slug: sh.provider, Name: sh.providerName}},
			Projects:  []catalog.Project{{Slug: sh.feed, Name: sh.feedName, ProviderSlug: sh.provider, Domain: sh.id, TemporalPattern: "periodic", FeedType: "timeseries"}},
		})
		if err != nil {
			return Result{}, fmt.Errorf("bench: register %s: %w", sh.id, err)
		}
	}
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return Result{}, fmt.Errorf("bench: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET maintenance_work_mem = '256MB'"); err != nil {
		return Result{}, fmt.Errorf("bench: %w", err)
	}
	rows, err := conn.Query(ctx, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'sensors' AND indexname <> 'sensors_pkey'")
	if err != nil {
		return Result{}, fmt.Errorf("bench: read index definitions: %w", err)
	}
	var names, defs []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return Result{}, fmt.Errorf("bench: read index definitions: %w", err)
		}
		names, defs = append(names, name), append(defs, def)
	}
	rows.Close()
	for _, name := range names {
		if _, err := conn.Exec(ctx, "DROP INDEX "+pgx.Identifier{name}.Sanitize()); err != nil {
			return Result{}, fmt.Errorf("bench: drop index %s: %w", name, err)
		}
	}
	g := newGenerator(seed)
	i := 0
	copied, err := conn.CopyFrom(ctx, pgx.Identifier{"sensors"}, copyColumns, pgx.CopyFromFunc(func() ([]any, error) {
		if i >= n {
			return nil, nil
		}
		i++
		return g.row(i), nil
	}))
	if err != nil {
		return Result{}, fmt.Errorf("bench: copy sensors: %w", err)
	}
	for k, def := range defs {
		if _, err := conn.Exec(ctx, def); err != nil {
			return Result{}, fmt.Errorf("bench: rebuild index %s: %w", names[k], err)
		}
	}
	for _, q := range []string{
		`UPDATE projects SET sensor_count = (SELECT count(*) FROM sensors s WHERE s.feed_id = projects.id AND s.missing_since IS NULL)`,
		`UPDATE services SET sensor_count = (SELECT count(*) FROM sensors s WHERE s.service_id = services.id AND s.missing_since IS NULL)`,
		`VACUUM ANALYZE sensors`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return Result{}, fmt.Errorf("bench: %s: %w", q, err)
		}
	}
	// COPY bypassed Sync: recompute the facets and move the generation as Sync would.
	if err := s.RebuildFacets(ctx); err != nil {
		return Result{}, fmt.Errorf("bench: %w", err)
	}
	return Result{Sensors: int(copied), Duration: time.Since(start)}, nil
}

var copyColumns = []string{"id", "service_id", "external_id", "ext_key", "name", "description", "sensor_type",
	"status", "data_types", "deployment_date", "latitude", "longitude", "provider_id", "provider_name",
	"provider_slug", "feed_id", "feed_name", "feed_slug", "reporting_interval_s", "updated_at", "search_text",
	"content_hash"}

type generator struct {
	r   *rand.Rand
	now time.Time
}

func newGenerator(seed uint64) *generator {
	return &generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
}

func (g *generator) pickShape() serviceShape {
	x := g.r.Float64()
	for _, sh := range shapes {
		if x < sh.share {
			return sh
		}
		x -= sh.share
	}
	return shapes[len(shapes)-1]
}

func (g *generator) position() (any, any) {
	x := g.r.Float64()
	switch {
	case x < 0.02:
		return nil, nil
	case x < 0.62:
		c := cities[g.r.IntN(len(cities))]
		lat := math.Max(-89.9, math.Min(89.9, c[0]+g.r.NormFloat64()*2.5))
		lon := c[1] + g.r.NormFloat64()*2.5
		if lon > 180 {
			lon -= 360
		} else if lon < -180 {
			lon += 360
		}
		return lat, lon
	default:
		// Uniform over the sphere between 70 S and 80 N.
		lat := math.Asin(g.r.Float64()*(math.Sin(80*math.Pi/180)+math.Sin(70*math.Pi/180))-math.Sin(70*math.Pi/180)) * 180 / math.Pi
		return lat, g.r.Float64()*360 - 180
	}
}

func (g *generator) row(i int) []any {
	sh := g.pickShape()
	ext := sh.idPrefix + strconv.Itoa(100000+i)
	name := places[g.r.IntN(len(places))] + " " + features[g.r.IntN(len(features))] + " " + strconv.Itoa(i%9973)
	desc := sh.sensorType + " operated by " + sh.providerName
	status := catalog.StatusActive
	switch x := g.r.IntN(100); {
	case x < 5:
		status = catalog.StatusInactive
	case x < 8:
		status = catalog.StatusMaintenance
	}
	lat, lon := g.position()
	providerID, feedID := ids.Provider(sh.provider), ids.Feed(sh.feed)
	search := strings.ToLower(name + "\x1f" + desc + "\x1f" + ext + "\x1f" + sh.providerName)
	deployed := g.now.AddDate(0, 0, -g.r.IntN(365*30))
	return []any{ids.Sensor(sh.id, ext), sh.id, ext, ext, name, desc, sh.sensorType, status,
		sh.dataTypes[g.r.IntN(len(sh.dataTypes))], deployed, lat, lon, providerID, sh.providerName, sh.provider,
		feedID, sh.feedName, sh.feed, 600, g.now, search, uuid.NewString()}
}
