-- ads (version 1): Advertising analytics warehouse behind the beta Ads API: who advertises, what runs where, what it cost and what it earned
-- Money is in USD. Query these tables by name with api.query(sql).

-- A media agency that manages advertisers on their behalf
CREATE TABLE agency (
  id BIGINT PRIMARY KEY,  -- unique id
  name VARCHAR NOT NULL,  -- Agency name
  country VARCHAR NOT NULL,  -- ISO country code of the agency's head office
  tier VARCHAR NOT NULL  -- Agency size tier (one of holding, independent, boutique)
);

-- A company that buys ads; the top of the account hierarchy
CREATE TABLE advertiser (
  id BIGINT PRIMARY KEY,  -- unique id
  agency_id BIGINT REFERENCES agency(id),  -- managing agency; empty for advertisers that buy directly
  name VARCHAR NOT NULL,  -- Advertiser (brand) name
  industry VARCHAR NOT NULL,  -- Industry vertical (one of retail, travel, finance, automotive, technology, health, gaming, education)
  country VARCHAR NOT NULL,  -- ISO country code of the advertiser
  created_on DATE NOT NULL,  -- Date the advertiser signed up
  is_active BOOLEAN NOT NULL  -- Whether the advertiser has at least one enabled account
);

-- A billing account of an advertiser; campaigns, budgets and invoices live under it
CREATE TABLE account (
  id BIGINT PRIMARY KEY,  -- unique id
  advertiser_id BIGINT NOT NULL REFERENCES advertiser(id),  -- owning advertiser
  name VARCHAR NOT NULL,  -- Account name
  currency VARCHAR NOT NULL,  -- Billing currency; all money fields are reported in USD (one of USD, EUR, GBP)
  timezone VARCHAR NOT NULL,  -- Reporting time zone (IANA name)
  status VARCHAR NOT NULL,  -- Account status (one of active, suspended, closed)
  created_on DATE NOT NULL  -- Date the account was opened
);

-- A spending limit shared by one or more campaigns of an account
CREATE TABLE budget (
  id BIGINT PRIMARY KEY,  -- unique id
  account_id BIGINT NOT NULL REFERENCES account(id),  -- account the budget belongs to
  name VARCHAR NOT NULL,  -- Budget name
  amount DOUBLE NOT NULL,  -- Budget amount per period, USD
  period VARCHAR NOT NULL,  -- Period the amount applies to (one of daily, monthly, lifetime)
  delivery VARCHAR NOT NULL,  -- How fast the budget may be spent within a day (one of standard, accelerated)
  is_shared BOOLEAN NOT NULL  -- Whether several campaigns draw on this budget
);

-- An automated or manual bidding strategy campaigns can use
CREATE TABLE bid_strategy (
  id BIGINT PRIMARY KEY,  -- unique id
  account_id BIGINT NOT NULL REFERENCES account(id),  -- account the strategy belongs to
  name VARCHAR NOT NULL,  -- Strategy name
  strategy_type VARCHAR NOT NULL,  -- Bidding algorithm (one of manual_cpc, maximize_clicks, target_cpa, target_roas, maximize_conversions)
  target_cpa DOUBLE,  -- Target cost per acquisition, USD; only for target_cpa strategies
  target_roas DOUBLE  -- Target return on ad spend (conversion value / cost); only for target_roas strategies
);

-- A budgeted set of ad groups with one objective and one channel
CREATE TABLE campaign (
  id BIGINT PRIMARY KEY,  -- unique id
  advertiser_id BIGINT NOT NULL REFERENCES advertiser(id),  -- owning advertiser
  account_id BIGINT NOT NULL REFERENCES account(id),  -- billing account
  budget_id BIGINT REFERENCES budget(id),  -- budget the campaign draws on
  bid_strategy_id BIGINT REFERENCES bid_strategy(id),  -- bidding strategy; empty means manual bids
  name VARCHAR NOT NULL,  -- Campaign name
  objective VARCHAR NOT NULL,  -- What the campaign optimises for (one of awareness, traffic, conversions, app_installs)
  channel VARCHAR NOT NULL,  -- Where the campaign's ads run (one of search, display, video, shopping)
  status VARCHAR NOT NULL,  -- Serving status (one of enabled, paused, archived)
  daily_budget DOUBLE,  -- Daily budget, USD
  start_date DATE NOT NULL,  -- First day the campaign may serve
  end_date DATE,  -- Last day the campaign may serve; empty for open-ended campaigns
  is_active BOOLEAN NOT NULL  -- DEPRECATED: use status = 'enabled'. Legacy serving flag
);

-- A group of ads and keywords inside a campaign that share a default bid and targeting
CREATE TABLE ad_group (
  id BIGINT PRIMARY KEY,  -- unique id
  campaign_id BIGINT NOT NULL REFERENCES campaign(id),  -- parent campaign
  name VARCHAR NOT NULL,  -- Ad group name
  status VARCHAR NOT NULL,  -- Serving status (one of enabled, paused, archived)
  default_bid DOUBLE NOT NULL  -- Default max cost per click, USD
);

-- A creative asset (text, image, video) an advertiser can reuse across ads
CREATE TABLE creative (
  id BIGINT PRIMARY KEY,  -- unique id
  advertiser_id BIGINT NOT NULL REFERENCES advertiser(id),  -- owning advertiser
  name VARCHAR NOT NULL,  -- Creative name
  format VARCHAR NOT NULL,  -- Asset format (one of text, image, video, html5)
  width BIGINT,  -- Width in pixels; empty for text
  height BIGINT,  -- Height in pixels; empty for text
  duration_s BIGINT,  -- Video length in seconds; empty unless video
  created_on DATE NOT NULL  -- Date the creative was uploaded
);

-- An ad: a creative placed in an ad group; the unit that serves and is reported on
CREATE TABLE ad (
  id BIGINT PRIMARY KEY,  -- unique id
  ad_group_id BIGINT NOT NULL REFERENCES ad_group(id),  -- parent ad group
  creative_id BIGINT NOT NULL REFERENCES creative(id),  -- creative the ad shows
  headline VARCHAR NOT NULL,  -- Headline text
  final_url VARCHAR NOT NULL,  -- Landing page URL
  status VARCHAR NOT NULL,  -- Serving status (one of enabled, paused, archived)
  approval VARCHAR NOT NULL  -- Policy review outcome (one of approved, limited, disapproved)
);

-- A search keyword an ad group bids on
CREATE TABLE keyword (
  id BIGINT PRIMARY KEY,  -- unique id
  ad_group_id BIGINT NOT NULL REFERENCES ad_group(id),  -- ad group the keyword belongs to
  text VARCHAR NOT NULL,  -- Keyword text
  match_type VARCHAR NOT NULL,  -- How closely a search must match (one of exact, phrase, broad)
  status VARCHAR NOT NULL,  -- Serving status (one of enabled, paused, archived)
  max_cpc DOUBLE,  -- Keyword-level max cost per click, USD; empty means the ad group default
  quality_score BIGINT  -- Quality score 1-10; empty until the keyword has enough traffic
);

-- A set of users an ad group can target (in-market, remarketing lists, lookalikes)
CREATE TABLE audience (
  id BIGINT PRIMARY KEY,  -- unique id
  advertiser_id BIGINT REFERENCES advertiser(id),  -- owner of a first-party audience; empty for platform audiences
  name VARCHAR NOT NULL,  -- Audience name
  audience_type VARCHAR NOT NULL,  -- Kind of audience (one of in_market, affinity, remarketing, custom, lookalike)
  size BIGINT NOT NULL  -- Estimated number of users
);

-- Targeting: an audience attached to an ad group, with a bid adjustment
CREATE TABLE ad_group_audience (
  id BIGINT PRIMARY KEY,  -- unique id
  ad_group_id BIGINT NOT NULL REFERENCES ad_group(id),  -- ad group that targets the audience
  audience_id BIGINT NOT NULL REFERENCES audience(id),  -- targeted audience
  mode VARCHAR NOT NULL,  -- Whether the audience restricts, observes or excludes (one of targeting, observation, exclusion)
  bid_modifier DOUBLE NOT NULL  -- Bid multiplier for users in the audience (1.0 = no change)
);

-- A company that sells ad space on its sites and apps
CREATE TABLE publisher (
  id BIGINT PRIMARY KEY,  -- unique id
  name VARCHAR NOT NULL,  -- Publisher name
  network VARCHAR NOT NULL,  -- Network the publisher sells through (one of search, display, video, app)
  revenue_share DOUBLE NOT NULL  -- Share of spend paid out to the publisher (0-1)
);

-- A website or mobile app owned by a publisher
CREATE TABLE site (
  id BIGINT PRIMARY KEY,  -- unique id
  publisher_id BIGINT NOT NULL REFERENCES publisher(id),  -- owning publisher
  domain VARCHAR NOT NULL,  -- Domain or app store id
  site_type VARCHAR NOT NULL,  -- Website or mobile app (one of web, app)
  category VARCHAR NOT NULL,  -- Content category (one of news, sports, entertainment, shopping, travel, finance, games, lifestyle)
  is_brand_safe BOOLEAN NOT NULL  -- Passed brand-safety review
);

-- A slot on a site or app where display and video ads are shown
CREATE TABLE placement (
  id BIGINT PRIMARY KEY,  -- unique id
  site_id BIGINT NOT NULL REFERENCES site(id),  -- site or app the slot is on
  name VARCHAR NOT NULL,  -- Placement name
  format VARCHAR NOT NULL,  -- Ad format the slot accepts (one of banner, native, video, interstitial)
  position VARCHAR NOT NULL  -- Where on the page the slot is (one of above_fold, below_fold, sidebar, in_feed)
);

-- A device class ads are served to
CREATE TABLE device (
  id BIGINT PRIMARY KEY,  -- unique id
  device_type VARCHAR NOT NULL,  -- Device class (one of desktop, mobile, tablet, connected_tv)
  os VARCHAR NOT NULL  -- Operating system (one of windows, macos, ios, android, linux, other)
);

-- A geographic target: a region of a country
CREATE TABLE geo (
  id BIGINT PRIMARY KEY,  -- unique id
  country VARCHAR NOT NULL,  -- ISO country code
  region VARCHAR NOT NULL,  -- Region or state name
  market_tier VARCHAR NOT NULL  -- Commercial market tier (one of tier1, tier2, tier3)
);

-- Something an advertiser counts as a conversion (a purchase, a lead, an install)
CREATE TABLE conversion_action (
  id BIGINT PRIMARY KEY,  -- unique id
  account_id BIGINT NOT NULL REFERENCES account(id),  -- account that tracks the action
  name VARCHAR NOT NULL,  -- Conversion action name
  category VARCHAR NOT NULL,  -- Kind of action (one of purchase, lead, signup, app_install, page_view)
  counting VARCHAR NOT NULL,  -- Count one conversion per click or every conversion (one of one, every)
  default_value DOUBLE,  -- Value used when a conversion reports none, USD
  attribution_window_days BIGINT NOT NULL  -- Days after a click a conversion is still credited to it
);

-- One logged click from the click log (a 1-in-10 sample of all clicks)
CREATE TABLE click (
  id BIGINT PRIMARY KEY,  -- unique id
  ad_id BIGINT NOT NULL REFERENCES ad(id),  -- clicked ad
  keyword_id BIGINT REFERENCES keyword(id),  -- matched keyword; empty for non-search clicks
  placement_id BIGINT REFERENCES placement(id),  -- placement clicked on; empty for search clicks
  device_id BIGINT NOT NULL REFERENCES device(id),  -- device of the click
  geo_id BIGINT NOT NULL REFERENCES geo(id),  -- location of the click
  clicked_at TIMESTAMP NOT NULL,  -- When the click happened (UTC)
  cost DOUBLE NOT NULL,  -- Cost of the click, USD
  is_invalid BOOLEAN NOT NULL  -- Flagged as invalid traffic and not billed
);

-- One attributed conversion; conversions arrive days after the click
CREATE TABLE conversion (
  id BIGINT PRIMARY KEY,  -- unique id
  click_id BIGINT REFERENCES click(id),  -- click the conversion is attributed to; empty for view-through conversions
  ad_id BIGINT NOT NULL REFERENCES ad(id),  -- ad the conversion is credited to
  conversion_action_id BIGINT NOT NULL REFERENCES conversion_action(id),  -- what was converted
  converted_at TIMESTAMP NOT NULL,  -- When the conversion happened (UTC)
  value DOUBLE NOT NULL,  -- Conversion value, USD
  is_view_through BOOLEAN NOT NULL  -- Credited to an impression, not a click
);

-- Daily performance of an ad on one device class in one geo (one row per date, ad, device, geo)
CREATE TABLE daily_stat (
  id BIGINT PRIMARY KEY,  -- unique id
  ad_id BIGINT NOT NULL REFERENCES ad(id),  -- ad the row reports on
  device_id BIGINT NOT NULL REFERENCES device(id),  -- device class
  geo_id BIGINT NOT NULL REFERENCES geo(id),  -- geo
  placement_id BIGINT REFERENCES placement(id),  -- placement for display and video rows; empty for search
  date DATE NOT NULL,  -- Reporting date
  impressions BIGINT NOT NULL,  -- Times the ad was shown
  clicks BIGINT NOT NULL,  -- Clicks on the ad
  cost DOUBLE NOT NULL,  -- Spend, USD
  conversions DOUBLE NOT NULL,  -- Conversions credited to the row (may be fractional under data-driven attribution)
  conversion_value DOUBLE NOT NULL,  -- Value of the credited conversions, USD
  viewable_impressions BIGINT,  -- Impressions measured as viewable; empty for search
  video_views BIGINT,  -- Video views; empty unless video
  avg_position DOUBLE  -- DEPRECATED: use impressions and clicks; position is no longer reported. Average position on the search results page
);

-- A monthly invoice billed to an account
CREATE TABLE invoice (
  id BIGINT PRIMARY KEY,  -- unique id
  account_id BIGINT NOT NULL REFERENCES account(id),  -- billed account
  month DATE NOT NULL,  -- First day of the billed month
  amount DOUBLE NOT NULL,  -- Invoiced amount, USD
  status VARCHAR NOT NULL,  -- Payment status (one of draft, issued, paid, overdue)
  issued_on DATE,  -- Date the invoice was issued; empty for drafts
  paid_on DATE  -- Date the invoice was paid; empty until paid
);

-- A controlled A/B test on a campaign, splitting traffic between arms
CREATE TABLE experiment (
  id BIGINT PRIMARY KEY,  -- unique id
  campaign_id BIGINT NOT NULL REFERENCES campaign(id),  -- campaign under test
  name VARCHAR NOT NULL,  -- Experiment name
  hypothesis VARCHAR NOT NULL,  -- What the experiment is expected to show
  goal_metric VARCHAR NOT NULL,  -- Metric that decides the winner (one of ctr, conversion_rate, cpa, roas)
  status VARCHAR NOT NULL,  -- Experiment status (one of running, completed, stopped)
  start_date DATE NOT NULL,  -- First day of the test
  end_date DATE  -- Last day of the test; empty while running
);

-- One arm of an experiment (control or a treatment), served by one ad group
CREATE TABLE experiment_arm (
  id BIGINT PRIMARY KEY,  -- unique id
  experiment_id BIGINT NOT NULL REFERENCES experiment(id),  -- experiment the arm belongs to
  ad_group_id BIGINT NOT NULL REFERENCES ad_group(id),  -- ad group that serves the arm's traffic
  name VARCHAR NOT NULL,  -- Arm name
  role VARCHAR NOT NULL,  -- Control or treatment (one of control, treatment)
  traffic_share DOUBLE NOT NULL  -- Share of the experiment's traffic sent to the arm (0-1)
);

-- A free-text label an account manager put on a campaign for reporting
CREATE TABLE label (
  id BIGINT PRIMARY KEY,  -- unique id
  campaign_id BIGINT NOT NULL REFERENCES campaign(id),  -- labelled campaign
  text VARCHAR NOT NULL,  -- Label text
  color VARCHAR NOT NULL  -- Label colour in the UI (one of red, orange, green, blue, grey)
);

-- Metrics
-- spend: Total spend in USD = sum(daily_stat.cost)
-- ctr: Click-through rate: clicks per impression = sum(daily_stat.clicks) / sum(daily_stat.impressions)
-- cpc: Average cost per click, USD = sum(daily_stat.cost) / sum(daily_stat.clicks)
-- cpm: Cost per thousand impressions, USD = sum(daily_stat.cost) * 1000 / sum(daily_stat.impressions)
-- conversion_rate: Conversions per click = sum(daily_stat.conversions) / sum(daily_stat.clicks)
-- cpa: Cost per acquisition (conversion), USD = sum(daily_stat.cost) / sum(daily_stat.conversions)
-- roas: Return on ad spend: conversion value per dollar spent = sum(daily_stat.conversion_value) / sum(daily_stat.cost)
-- average_order_value: Conversion value per conversion, USD = sum(daily_stat.conversion_value) / sum(daily_stat.conversions)
-- viewability: Share of measured impressions that were viewable = sum(daily_stat.viewable_impressions) / sum(daily_stat.impressions)
-- video_view_rate: Video views per impression = sum(daily_stat.video_views) / sum(daily_stat.impressions)
-- budget_pacing: Spend as a share of the daily budgets over the period = sum(daily_stat.cost) / sum(campaign.daily_budget)
-- average_quality_score: Mean keyword quality score = avg(keyword.quality_score)
-- conversion_value_per_click: Conversion value per click, USD = sum(daily_stat.conversion_value) / sum(daily_stat.clicks)
