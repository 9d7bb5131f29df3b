package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/jsonbytes"
	"github.com/sensorgate/sensorgate/pkg/ttlcache"
)

// List sizes (docs/api-decisions.md "Lists and ordering").
const (
	DefaultLimit = 20
	MaxLimit     = 1000
	// EarthRadiusKM is the mean earth radius (IUGG) of every great-circle distance.
	EarthRadiusKM = 6371.0088
	// searchSep joins the searchable fields in search_text; a search term cannot match
	// across two fields unless it contains the separator itself.
	searchSep = "\x1f"
)

// deferredJoinOffset is the offset from which a page is located with a narrow inner query
// first (index-only on (name, id) when no filter needs other columns) and only then
// fetched whole.
const deferredJoinOffset = 200

// filterFirstMax is the largest exact total for which a filtered page is found by
// collecting every match first and sorting it (see ListSensors); above it, matches are
// dense enough that walking the (name, id) index finds a page quickly.
const filterFirstMax = 20_000

func (d dialect) sensorColumns(prefix string) string {
	p := prefix
	return strings.Join([]string{
		p + "id", p + "service_id", p + "external_id", p + "name", p + "description", p + "sensor_type",
		p + "status", d.arraySelect(p + "data_types"), d.dateSelect(p + "deployment_date"),
		d.dateSelect(p + "decommissioned_date"), p + "latitude", p + "longitude", p + "provider_id",
		p + "provider_name", p + "provider_slug", p + "feed_id", p + "feed_name", p + "feed_slug",
		p + "reporting_interval_s", p + "last_reading_at", p + "missing_since", p + "updated_at",
	}, ", ")
}

type rowScanner interface{ Scan(dest ...any) error }

// eachRow runs q and calls read on every row it returns, in order, until read fails.
func eachRow(q *gorm.DB, read func(rowScanner) error) error {
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := read(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// queryRows runs q and reads every row it returns with scan, in order.
func queryRows[T any](q *gorm.DB, scan func(rowScanner) (T, error)) ([]T, error) {
	out := []T{}
	err := eachRow(q, func(r rowScanner) error {
		v, err := scan(r)
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func scanSensor(r rowScanner) (catalog.Sensor, error) {
	var (
		s                   catalog.Sensor
		dataTypes           string
		deploy, decom       sql.NullString
		lat, lon            sql.NullFloat64
		providerID, feedID  uuid.NullUUID
		lastReading, missed sql.NullTime
	)
	err := r.Scan(&s.ID, &s.ServiceID, &s.ExternalID, &s.Name, &s.Description, &s.SensorType,
		&s.Status, &dataTypes, &deploy, &decom, &lat, &lon, &providerID,
		&s.ProviderName, &s.ProviderSlug, &feedID, &s.FeedName, &s.FeedSlug,
		&s.ReportingIntervalS, &lastReading, &missed, &s.UpdatedAt)
	if err != nil {
		return s, fmt.Errorf("store: scan sensor: %w", err)
	}
	if s.DataTypes, err = jsonbytes.StringList(dataTypes); err != nil {
		return s, fmt.Errorf("store: sensor %s: data_types %q: %w", s.ID, dataTypes, err)
	}
	if s.DataTypes == nil {
		s.DataTypes = []string{}
	}
	s.DeploymentDate = parseDate(deploy)
	s.DecommissionedDate = parseDate(decom)
	if lat.Valid && lon.Valid {
		la, lo := lat.Float64, lon.Float64
		s.Latitude, s.Longitude = &la, &lo
	}
	if providerID.Valid {
		id := providerID.UUID
		s.ProviderID = &id
	}
	if feedID.Valid {
		id := feedID.UUID
		s.FeedID = &id
	}
	s.LastReadingAt = nullTime(lastReading)
	s.MissingSince = nullTime(missed)
	s.UpdatedAt = s.UpdatedAt.UTC()
	return s, nil
}

func parseDate(v sql.NullString) *time.Time {
	if !v.Valid || len(v.String) < 10 {
		return nil
	}
	t, err := time.Parse(time.DateOnly, v.String[:10])
	if err != nil {
		return nil
	}
	return &t
}

func nullTime(v sql.NullTime) *time.Time {
	if !v.Valid {
		return nil
	}
	t := v.Time.UTC()
	return &t
}

// Sensor returns the sensor with the given id.
func (s *Store) Sensor(ctx context.Context, id uuid.UUID) (catalog.Sensor, error) {
	row := s.db.WithContext(ctx).Raw("SELECT "+s.d.sensorColumns("")+" FROM sensors WHERE id = ?", id).Row()
	sn, err := scanSensor(row)
	if errors.Is(err, sql.ErrNoRows) {
		return sn, fmt.Errorf("sensor %s: %w", id, catalog.ErrNotFound)
	}
	return sn, err
}

// SensorByExternalID resolves a provider's station id byte for byte (as ids.Sensor does:
// "21 de Mayo" and "21 de mayo" are two sensors); when several services know it, the first
// service by id wins. An id spelled in another case ("tplm2") finds the sensor whose id
// equals it ignoring ASCII case when exactly one does; a spelling that matches two
// sensors finds neither.
func (s *Store) SensorByExternalID(ctx context.Context, externalID string) (catalog.Sensor, error) {
	if err := checkText("id", externalID); err != nil {
		return catalog.Sensor{}, err
	}
	row := s.db.WithContext(ctx).Raw("SELECT "+s.d.sensorColumns("")+
		" FROM sensors WHERE ext_key = ? ORDER BY service_id LIMIT 1", externalID).Row()
	sn, err := scanSensor(row)
	if errors.Is(err, sql.ErrNoRows) {
		sn, err = s.sensorFolded(ctx, externalID)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return sn, fmt.Errorf("sensor with external id %q: %w", externalID, catalog.ErrNotFound)
	}
	return sn, err
}

// sensorFolded is SensorByExternalID's case-insensitive fallback: sql.ErrNoRows unless the
// matches share one external id (the same station at several services counts once).
func (s *Store) sensorFolded(ctx context.Context, externalID string) (catalog.Sensor, error) {
	rows, err := s.db.WithContext(ctx).Raw("SELECT "+s.d.sensorColumns("")+
		" FROM sensors WHERE lower(ext_key) = lower(?) ORDER BY service_id LIMIT 20", externalID).Rows()
	if err != nil {
		return catalog.Sensor{}, err
	}
	defer rows.Close()
	var first catalog.Sensor
	n := 0
	for rows.Next() {
		sn, err := scanSensor(rows)
		if err != nil {
			return catalog.Sensor{}, err
		}
		if n == 0 {
			first = sn
		} else if sn.ExternalID != first.ExternalID {
			return catalog.Sensor{}, sql.ErrNoRows // ambiguous: two spellings
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return catalog.Sensor{}, err
	}
	if n == 0 {
		return catalog.Sensor{}, sql.ErrNoRows
	}
	return first, nil
}

// SensorTypes lists the distinct sensor types, from the facets of the generation.
func (s *Store) SensorTypes(ctx context.Context) ([]string, error) {
	return s.distinct(ctx, "sensor_type")
}

// SensorStatuses lists the distinct sensor statuses, from the facets of the generation.
func (s *Store) SensorStatuses(ctx context.Context) ([]string, error) {
	return s.distinct(ctx, "status")
}

func (s *Store) distinct(ctx context.Context, col string) ([]string, error) {
	db := s.db.WithContext(ctx)
	gen, err := generation(db)
	if err != nil {
		return nil, err
	}
	fs, err := s.facets(db, gen)
	if err != nil {
		return nil, err
	}
	if col == "status" {
		return facetValues(fs, func(f facet) string { return f.status }), nil
	}
	return facetValues(fs, func(f facet) string { return f.sensorType }), nil
}

// generation reads the catalog generation, bumped by every Sync that changes a sensor:
// read from the database so that every replica invalidates its caches at once.
func generation(db *gorm.DB) (int64, error) {
	var g int64
	if err := db.Raw("SELECT generation FROM catalog_state WHERE id = 1").Row().Scan(&g); err != nil {
		return 0, fmt.Errorf("store: read catalog generation: %w", err)
	}
	return g, nil
}

// sensorQuery is the WHERE clause of a filter with its arguments.
type sensorQuery struct {
	where   []string
	args    []any
	distSQL string // great-circle distance expression when the filter has a radius
	// geo remembers the map-filter clauses, so that split can take their boxes apart.
	geo      []geoClause
	d        dialect
	geoIndex bool
}

// geoClause is the where clause at pos, matching any of boxes.
type geoClause struct {
	pos   int
	boxes []geoBox
}

func (q *sensorQuery) addBoxes(boxes []geoBox) {
	q.geo = append(q.geo, geoClause{pos: len(q.where), boxes: boxes})
	q.add(q.d.boxesSQL(boxes, q.geoIndex))
}

// split returns one query per box when one map filter is two boxes (a box or circle cut
// at the antimeridian). The boxes are disjoint, so counts add up and matches do not
// repeat, and each part stays an index-only scan of the GiST index, where an OR of two
// boxes becomes a bitmap scan that visits the heap for every match.
func (q sensorQuery) split() []sensorQuery {
	multi := -1
	for i, g := range q.geo {
		if len(g.boxes) > 1 {
			if multi >= 0 {
				return []sensorQuery{q}
			}
			multi = i
		}
	}
	if multi < 0 {
		return []sensorQuery{q}
	}
	g := q.geo[multi]
	out := make([]sensorQuery, 0, len(g.boxes))
	for _, b := range g.boxes {
		part := q
		part.where = append([]string(nil), q.where...)
		part.where[g.pos] = q.d.boxesSQL([]geoBox{b}, q.geoIndex)
		part.geo = nil
		out = append(out, part)
	}
	return out
}

func (q *sensorQuery) add(cond string, args ...any) {
	q.where = append(q.where, cond)
	q.args = append(q.args, args...)
}

// eq adds "column = v" when v is set; an empty v filters nothing.
func (q *sensorQuery) eq(column, v string) {
	if v != "" {
		q.add(column+" = ?", v)
	}
}

// key identifies the query in the caches.
func (q *sensorQuery) key() string {
	return q.whereSQL() + "\x00" + fmt.Sprintf("%#v", q.args)
}

func (q *sensorQuery) whereSQL() string {
	if len(q.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(q.where, " AND ")
}

func validCoord(name string, v, lo, hi float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return apierr.Invalid(name, "want a number between %g and %g, got %v", lo, hi, v)
	}
	return nil
}

// fnum renders a validated float for inlining into SQL; numbers carry no injection risk
// and literal values let the planner estimate the geographic ranges.
func fnum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// buildSensorQuery turns a filter into SQL. Bad values are *apierr.Error naming the field.
//
// Map filters come in two forms with the same meaning. With geoIndex, boxes are written as
// containment in the GiST index, which finds matches fast but which the planner costs with
// a fixed guess of 0.1 % of rows; without, as comparisons of latitude and longitude, which
// no index serves but which the planner estimates from column statistics. Counting and
// collecting matches use the first; walking the name index uses the second, so that the
// planner does not abandon the walk for a "tiny" box that holds a tenth of the catalog.
func (d dialect) buildSensorQuery(f catalog.SensorFilter, geoIndex bool) (sensorQuery, error) {
	q := sensorQuery{d: d, geoIndex: geoIndex}
	if f.Search != "" {
		term := strings.ToLower(f.Search)
		switch {
		case strings.Contains(term, searchSep):
			q.add("1 = 0") // no single field holds the separator
		case d.postgres:
			q.add(`search_text LIKE ? ESCAPE '\'`, "%"+escapeLike(term)+"%")
		default:
			q.add("instr(search_text, ?) > 0", term)
		}
	}
	q.eq("sensor_type", f.SensorType)
	q.eq("status", f.Status)
	q.eq("provider_slug", f.Provider)
	q.eq("service_id", f.ServiceID)
	if f.FeedID != nil {
		q.add("feed_id = ?", *f.FeedID)
	}
	if len(f.IDs) > 0 || len(f.ExternalIDs) > 0 {
		// The sensor_ids filter of area latest and streams: by UUID or exact external id.
		keys, ids := f.ExternalIDs, f.IDs
		if keys == nil {
			keys = []string{}
		}
		if ids == nil {
			ids = []uuid.UUID{}
		}
		q.add("(id IN ? OR ext_key IN ?)", ids, keys)
	}
	if len(f.DataTypes) > 0 {
		if d.postgres {
			q.add("data_types && "+d.arrayParam(), d.arrayValue(f.DataTypes))
		} else {
			q.add("EXISTS (SELECT 1 FROM json_each(sensors.data_types) j WHERE j.value IN (SELECT value FROM json_each(?)))", jsonArray(f.DataTypes))
		}
	}
	if f.BBox != nil || f.Near != nil {
		q.add("latitude IS NOT NULL AND longitude IS NOT NULL")
	}
	if b := f.BBox; b != nil {
		for _, c := range []struct {
			name   string
			v, lim float64
		}{{"min_lat", b.MinLat, 90}, {"max_lat", b.MaxLat, 90}, {"min_lon", b.MinLon, 180}, {"max_lon", b.MaxLon, 180}} {
			if err := validCoord(c.name, c.v, -c.lim, c.lim); err != nil {
				return q, err
			}
		}
		if b.MinLat > b.MaxLat {
			return q, apierr.Invalid("min_lat", "must not be greater than max_lat (%g > %g)", b.MinLat, b.MaxLat)
		}
		if b.MinLon <= b.MaxLon {
			q.addBoxes([]geoBox{{b.MinLat, b.MaxLat, b.MinLon, b.MaxLon}})
		} else { // crosses the antimeridian: the part east of MinLon and the part west of MaxLon
			q.addBoxes([]geoBox{{b.MinLat, b.MaxLat, b.MinLon, 180}, {b.MinLat, b.MaxLat, -180, b.MaxLon}})
		}
	}
	if n := f.Near; n != nil {
		if err := validCoord("lat", n.Lat, -90, 90); err != nil {
			return q, err
		}
		if err := validCoord("lon", n.Lon, -180, 180); err != nil {
			return q, err
		}
		if math.IsNaN(n.RadiusKM) || math.IsInf(n.RadiusKM, 0) || n.RadiusKM <= 0 {
			return q, apierr.Invalid("radius_km", "want a positive number of kilometres, got %v", n.RadiusKM)
		}
		// The bounding boxes of the circle first, so the spatial index does the coarse
		// work; the haversine formula then decides exactly.
		q.addBoxes(radiusBoxes(n.Lat, n.Lon, n.RadiusKM))
		q.distSQL = d.haversineSQL(n.Lat, n.Lon)
		q.add(q.distSQL + " <= " + fnum(n.RadiusKM))
	}
	return q, nil
}

// haversineSQL is the great-circle distance in km from (lat, lon) to each sensor.
func (d dialect) haversineSQL(lat, lon float64) string {
	return fmt.Sprintf("(2 * %s * asin(sqrt(%s(1.0, power(sin(radians(latitude - (%s)) / 2), 2) + "+
		"cos(radians(%s)) * cos(radians(latitude)) * power(sin(radians(longitude - (%s)) / 2), 2)))))",
		fnum(EarthRadiusKM), d.least(), fnum(lat), fnum(lat), fnum(lon))
}

// geoBox is a latitude/longitude rectangle that does not cross the antimeridian.
type geoBox struct{ minLat, maxLat, minLon, maxLon float64 }

// boxesSQL matches sensors inside any of the boxes: with geoIndex on PostgreSQL through
// the GiST index on point(longitude, latitude) (migrations 0002, 0003), otherwise by
// comparisons.
func (d dialect) boxesSQL(boxes []geoBox, geoIndex bool) string {
	parts := make([]string, 0, len(boxes))
	for _, b := range boxes {
		if d.postgres && geoIndex {
			parts = append(parts, "point(longitude, latitude) <@ box(point("+fnum(b.minLon)+", "+fnum(b.minLat)+
				"), point("+fnum(b.maxLon)+", "+fnum(b.maxLat)+"))")
		} else {
			parts = append(parts, "(latitude >= "+fnum(b.minLat)+" AND latitude <= "+fnum(b.maxLat)+
				" AND longitude >= "+fnum(b.minLon)+" AND longitude <= "+fnum(b.maxLon)+")")
		}
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// radiusBoxes bounds the circle of radius r km around (lat, lon): by latitude and, when no
// pole lies inside it, by longitude, split in two where it crosses the antimeridian.
func radiusBoxes(lat, lon, r float64) []geoBox {
	ang := r / EarthRadiusKM // angular radius, radians
	dLat := ang * 180 / math.Pi
	minLat, maxLat := math.Max(lat-dLat, -90), math.Min(lat+dLat, 90)
	if minLat <= -90 || maxLat >= 90 || ang >= math.Pi/2 {
		return []geoBox{{minLat, maxLat, -180, 180}}
	}
	s := math.Sin(ang) / math.Cos(lat*math.Pi/180)
	if s >= 1 {
		return []geoBox{{minLat, maxLat, -180, 180}}
	}
	dLon := math.Asin(s) * 180 / math.Pi
	minLon, maxLon := lon-dLon, lon+dLon
	switch {
	case minLon < -180:
		return []geoBox{{minLat, maxLat, minLon + 360, 180}, {minLat, maxLat, -180, maxLon}}
	case maxLon > 180:
		return []geoBox{{minLat, maxLat, minLon, 180}, {minLat, maxLat, -180, maxLon - 360}}
	default:
		return []geoBox{{minLat, maxLat, minLon, maxLon}}
	}
}

// Haversine is the great-circle distance in km between two points given in degrees.
func Haversine(lat1, lon1, lat2, lon2 float64) float64 {
	rad := math.Pi / 180
	dLat := (lat2 - lat1) * rad
	dLon := (lon2 - lon1) * rad
	a := math.Pow(math.Sin(dLat/2), 2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Pow(math.Sin(dLon/2), 2)
	return 2 * EarthRadiusKM * math.Asin(math.Sqrt(math.Min(1, a)))
}

// escapeLike makes a LIKE pattern match s literally (escape character backslash).
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// ListSensors returns one page of the sensors matching f and their exact total. What it
// learns is cached per replica for the current catalog generation: the total of each
// filter, and for filters with few matches their ids in list order, so paging through a
// result or repeating a popular query costs a primary-key lookup of one page.
func (s *Store) ListSensors(ctx context.Context, f catalog.SensorFilter) (catalog.SensorPage, error) {
	return s.listSensors(ctx, f, s.d.sensorColumns(""), scanSensor, nil)
}

// areaColumns are the columns of a sensor that area latest and the area streams read
// (7 of the 22 a sensor list reads): an area-latest page of 1,000 sensors spent ~7 ms
// reading and scanning the 22 (docs/live.md, "Area latest").
const areaColumns = "id, service_id, external_id, name, latitude, longitude, reporting_interval_s"

func scanAreaSensor(r rowScanner) (catalog.Sensor, error) {
	var (
		s        catalog.Sensor
		lat, lon sql.NullFloat64
	)
	if err := r.Scan(&s.ID, &s.ServiceID, &s.ExternalID, &s.Name, &lat, &lon, &s.ReportingIntervalS); err != nil {
		return s, fmt.Errorf("store: scan sensor: %w", err)
	}
	if lat.Valid && lon.Valid {
		la, lo := lat.Float64, lon.Float64
		s.Latitude, s.Longitude = &la, &lo
	}
	return s, nil
}

// Bounds of the area page cache: what a generation's popular area queries need, far
// below the gateway's memory; the TTL only frees pages of filters nobody asks for any
// more, since a new catalog generation makes every cached page unreachable at once.
const (
	areaCacheTTL   = 10 * time.Minute
	areaCachePages = 512
	areaCacheBytes = 64 << 20
)

func newAreaCache() *ttlcache.Cache[string, catalog.SensorPage] {
	return ttlcache.New(areaCacheTTL, areaCachePages, areaCacheBytes, func(k string, p catalog.SensorPage) int64 {
		n := ttlcache.KeySize(k) + ttlcache.EntryOverhead
		for i := range p.Sensors {
			sn := &p.Sensors[i]
			n += int64(unsafe.Sizeof(*sn)) + int64(len(sn.ServiceID)+len(sn.ExternalID)+len(sn.Name)) + 48
		}
		return n
	})
}

// AreaSensors implements catalog.Store: ListSensors' sensors, order and total for area
// latest and the area streams, with only the fields they use. A page is cached per catalog
// generation, which every Sync that changes a sensor's listed fields bumps (in the shared
// database, so for every replica), and read each call: a changed catalog is seen by the
// next call. last_reading_at changes without a new generation and is not in the page
// (LastReadingTimes reads it).
func (s *Store) AreaSensors(ctx context.Context, f catalog.SensorFilter) (catalog.SensorPage, error) {
	return s.listSensors(ctx, f, areaColumns, scanAreaSensor, s.area)
}

// LastReadingTimes implements catalog.Store.
func (s *Store) LastReadingTimes(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]time.Time, error) {
	out := make(map[uuid.UUID]time.Time, len(ids))
	for i := 0; i < len(ids); i += MaxLimit {
		rows, err := s.db.WithContext(ctx).Raw("SELECT id, last_reading_at FROM sensors WHERE last_reading_at IS NOT NULL AND id IN ?", ids[i:min(i+MaxLimit, len(ids))]).Rows()
		if err != nil {
			return nil, fmt.Errorf("store: last reading times: %w", err)
		}
		for rows.Next() {
			var (
				id uuid.UUID
				at time.Time
			)
			if err := rows.Scan(&id, &at); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: last reading times: %w", err)
			}
			out[id] = at.UTC()
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store: last reading times: %w", err)
		}
	}
	return out, nil
}

// listSensors is ListSensors reading cols with scan; with a cache, pages are kept per
// generation in it.
func (s *Store) listSensors(ctx context.Context, f catalog.SensorFilter, cols string, scan func(rowScanner) (catalog.Sensor, error),
	cache *ttlcache.Cache[string, catalog.SensorPage]) (page catalog.SensorPage, err error) {
	page = catalog.SensorPage{Sensors: []catalog.Sensor{}}
	if err := checkText("search", f.Search, "sensor_type", f.SensorType, "status", f.Status, "provider", f.Provider, "service_id", f.ServiceID); err != nil {
		return page, err
	}
	if err := checkList("data_types", f.DataTypes); err != nil {
		return page, err
	}
	if f.Page < 1 {
		f.Page = 1
	}
	if f.Limit <= 0 {
		f.Limit = DefaultLimit
	}
	f.Limit = min(f.Limit, MaxLimit)
	if f.Page > math.MaxInt32/f.Limit {
		return page, apierr.Invalid("page", "page %d is beyond any catalog", f.Page)
	}
	q, err := s.d.buildSensorQuery(f, true)
	if err != nil {
		return page, err
	}
	db := s.db.WithContext(ctx)
	gen, err := generation(db)
	if err != nil {
		return page, err
	}
	byDistance := f.Near != nil && f.SortByDistance
	var cacheKey string
	if cache != nil {
		cacheKey = strconv.FormatInt(gen, 10) + "\x00" + strconv.FormatBool(byDistance) + "\x00" + strconv.Itoa(f.Page) +
			"\x00" + strconv.Itoa(f.Limit) + "\x00" + q.key()
		if old := s.areaGen.Load(); gen > old && s.areaGen.CompareAndSwap(old, gen) {
			cache.Clear() // the pages of older generations are unreachable: free them now
		}
		if p, _, ok := cache.Get(cacheKey, time.Now()); ok {
			return p, nil
		}
		defer func() {
			if err == nil {
				now := time.Now()
				cache.Put(cacheKey, page, now, now)
			}
		}()
	}
	total := -1
	if _, counted := s.counts.get(gen, q.key()); f.Search != "" && !counted && s.filterFirstMax > 0 {
		// A search mostly matches few sensors: collecting them gives the total too, where
		// counting first would read every match twice.
		ids, complete, err := s.collectIDs(db, gen, q, byDistance, s.filterFirstMax)
		if err != nil {
			return page, err
		}
		if complete {
			total = len(ids)
			s.counts.put(gen, q.key(), total)
		}
	}
	if total < 0 {
		if total, err = s.total(db, gen, f, q); err != nil {
			return page, err
		}
	}
	page.Total = total
	offset := (f.Page - 1) * f.Limit
	if offset >= total {
		return page, nil
	}
	order := " ORDER BY name, id"
	if byDistance {
		order = " ORDER BY " + q.distSQL + ", name, id"
	}
	filterFirst, err := s.filterFirst(db, gen, f, q, total, offset)
	if err != nil {
		return page, err
	}
	var rows *sql.Rows
	switch {
	case filterFirst:
		ids, err := s.matchIDs(db, gen, q, byDistance)
		if err != nil {
			return page, err
		}
		ids = ids[min(offset, len(ids)):min(offset+f.Limit, len(ids))]
		if len(ids) == 0 {
			return page, nil
		}
		rows, err = db.Raw("SELECT "+cols+" FROM sensors WHERE id IN ?"+order, ids).Rows()
		if err != nil {
			return page, fmt.Errorf("store: list sensors: %w", err)
		}
	default:
		if f.BBox != nil || f.Near != nil {
			if q, err = s.d.buildSensorQuery(f, false); err != nil {
				return page, err
			}
		}
		query := "SELECT " + cols + " FROM sensors" + q.whereSQL() + order + " LIMIT ? OFFSET ?"
		if offset >= s.deferredJoinOffset {
			query = "SELECT " + cols + " FROM sensors WHERE id IN (SELECT id FROM sensors" +
				q.whereSQL() + order + " LIMIT ? OFFSET ?)" + order
		}
		args := append(append([]any{}, q.args...), f.Limit, offset)
		rows, err = db.Raw(query, args...).Rows()
		if err != nil {
			return page, fmt.Errorf("store: list sensors: %w", err)
		}
	}
	defer rows.Close()
	for rows.Next() {
		sn, err := scan(rows)
		if err != nil {
			return page, err
		}
		if f.Near != nil && sn.Latitude != nil {
			d := Haversine(f.Near.Lat, f.Near.Lon, *sn.Latitude, *sn.Longitude)
			sn.DistanceKM = &d
		}
		page.Sensors = append(page.Sensors, sn)
	}
	if err := rows.Err(); err != nil {
		return page, fmt.Errorf("store: list sensors: %w", err)
	}
	return page, nil
}

// matchIDs returns the ids of every sensor matching q in list order, found through the
// filter's own index (trigram, GIN, GiST) and sorted, and cached for the generation.
// MATERIALIZED keeps PostgreSQL from turning the collection back into a name-index walk.
func (s *Store) matchIDs(db *gorm.DB, gen int64, q sensorQuery, byDistance bool) ([]uuid.UUID, error) {
	ids, _, err := s.collectIDs(db, gen, q, byDistance, 0)
	return ids, err
}

// collectIDs is matchIDs that gives up beyond max matches (when max > 0): complete is
// false then, and nothing is cached.
func (s *Store) collectIDs(db *gorm.DB, gen int64, q sensorQuery, byDistance bool, max int) (ids []uuid.UUID, complete bool, err error) {
	key := "ids\x00" + strconv.FormatBool(byDistance) + q.key()
	if ids, ok := s.counts.getIDs(gen, key); ok {
		return ids, true, nil
	}
	cols, order := "id, name", " ORDER BY name, id"
	if byDistance {
		cols, order = "id, name, "+q.distSQL+" AS dist", " ORDER BY dist, name, id"
	}
	var (
		parts []string
		args  []any
	)
	for _, part := range q.split() {
		parts = append(parts, "SELECT "+cols+" FROM sensors"+part.whereSQL())
		args = append(args, part.args...)
	}
	limit := ""
	if max > 0 {
		limit = " LIMIT ?"
		args = append(args, max+1)
	}
	err = db.Raw("WITH m AS MATERIALIZED ("+strings.Join(parts, " UNION ALL ")+limit+") SELECT id FROM m"+order, args...).
		Scan(&ids).Error
	if err != nil {
		return nil, false, fmt.Errorf("store: list sensors: collect matches: %w", err)
	}
	if max > 0 && len(ids) > max {
		return nil, false, nil
	}
	s.counts.putIDs(gen, key, ids)
	return ids, true, nil
}

// filterFirst decides how a filtered page is found, knowing the exact number of matches:
// collect every match through the filter's own index (trigram, GIN, GiST) and sort them,
// or walk the (name, id) index until the page is filled. Walking reads about
// (offset+limit) * catalog/total rows when matches are spread evenly, collecting reads
// total rows; PostgreSQL's planner guesses total instead of knowing it. A search always
// collects (up to filterFirstMax matches): its matches cluster in name order, since a
// word found in names mostly starts them ("harbor" finds the "Harbor ..." stretch of the
// index), and walking to that stretch reads much of the catalog.
func (s *Store) filterFirst(db *gorm.DB, gen int64, f catalog.SensorFilter, q sensorQuery, total, offset int) (bool, error) {
	switch {
	case len(q.where) == 0:
		return false, nil
	case total > s.filterFirstMax:
		return false, nil
	case f.Near != nil && f.SortByDistance:
		return true, nil // no index gives distance order anyway
	case f.Search != "":
		return true, nil
	}
	all, err := s.total(db, gen, catalog.SensorFilter{}, sensorQuery{})
	if err != nil {
		return false, err
	}
	k := float64(offset + f.Limit)
	return float64(total)*float64(total) <= walkCost*k*float64(all), nil
}

// walkCost weighs a row read in name order (an index probe and a random heap read) against
// a row collected by a bitmap scan (sequential-ish heap reads).
const walkCost = 4

// total is the exact number of sensors matching f (built into q): from the facets when f
// tests only their fields, otherwise counted once per generation.
func (s *Store) total(db *gorm.DB, gen int64, f catalog.SensorFilter, q sensorQuery) (int, error) {
	if facetCountable(f) {
		fs, err := s.facets(db, gen)
		if err != nil {
			return 0, err
		}
		return countFacets(fs, f), nil
	}
	return s.countSensors(db, gen, q)
}

func (s *Store) countSensors(db *gorm.DB, gen int64, q sensorQuery) (int, error) {
	key := q.key()
	if n, ok := s.counts.get(gen, key); ok {
		return n, nil
	}
	var n int64
	for _, part := range q.split() {
		var c int64
		if err := db.Raw("SELECT count(*) FROM sensors"+part.whereSQL(), part.args...).Row().Scan(&c); err != nil {
			return 0, fmt.Errorf("store: count sensors: %w", err)
		}
		n += c
	}
	s.counts.put(gen, key, int(n))
	return int(n), nil
}
