"""A product exported as several rows (Shopify: a row per variant and image under one `Handle`,
the title on the first only) is one item, and option columns in name/value pairs are columns of
their own (recsys/io/variants.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.errors import DataError
from recsys.io.readers import read_items
from recsys.io.variants import option_pairs
from training.fit import TrainConfig
from training.start import untrained_recommender

from ..planted import SHOPIFY


@pytest.fixture
def export(tmp_path):
    path = tmp_path / "products_export.csv"
    path.write_text(SHOPIFY)
    return path


def test_a_product_s_rows_are_one_item_and_its_options_columns(export):
    items, report = read_items(export)
    assert items["item_id"].tolist() == ["linen-shirt", "wrap-dress", "chelsea-boots"]
    shirt = items.iloc[0]
    assert shirt["title"] == "Linen Shirt" and shirt["description"] == "A relaxed linen shirt."
    assert shirt["Color"] == "Navy|White" and shirt["Size"] == "S|M"
    assert shirt["Variant SKU"] == "LS-NAVY-S|LS-NAVY-M|LS-WHITE-S"
    assert shirt["Variant Price"] == "49.00"  # of numbers the least: the price a shop says "from"
    assert shirt["Image Src"].count("https://") == 3
    assert items.iloc[1]["Size"] == "S|M" and items.iloc[1]["Color"] == ""
    # the one option of a product without variants is Shopify's placeholder, not a value
    assert items.iloc[2]["Size"] == "" and items.iloc[2]["Color"] == ""
    assert not any(c.startswith("Option") for c in items.columns) and "Title" not in items.columns
    assert report.notices[:2] == [
        "options read as columns of their own: Color (1 item), Size (2 items)",
        "4 rows with the item_id of the row above and no title read into that item "
        "(a product's variants and images): 3 items"]


def test_the_options_are_facets_to_match_filter_and_explain(export):
    items, _ = read_items(export)
    rec = untrained_recommender(Catalog.build(items), _NO_ROWS, TrainConfig(seed=0))
    white = rec.catalog.filter_mask({"color": ["white"]})
    assert [rec.catalog.item_ids[i] for i in np.flatnonzero(white)] == ["linen-shirt"]
    top = rec.recommend("white shirt", k=1).items[0]
    assert top.item_id == "linen-shirt" and "white" in top.attributes["color"]
    color = next(h for h in top.explanation.heads if h.head == "color")
    assert [(m.query_token, m.attribute) for m in color.matches] == [("white", "white")]


@pytest.mark.parametrize("header, pairs", [
    (["Option1 Name", "Option1 Value", "Option2 Name", "Option2 Value"],
     [("Option1 Name", "Option1 Value"), ("Option2 Name", "Option2 Value")]),
    (["Attribute 1 name", "Attribute 1 value(s)"], [("Attribute 1 name", "Attribute 1 value(s)")]),
    (["Option Name 1", "Option Value 1", "Option Name 2", "Option Value 2"],  # Squarespace
     [("Option Name 1", "Option Value 1"), ("Option Name 2", "Option Value 2")]),
    (["Product Name", "Product Value", "Brand Name"], []),  # not numbered: a name of the product
])
def test_option_pairs(header, pairs):
    assert option_pairs(header) == pairs


def test_woocommerce_attribute_values_are_comma_separated(tmp_path):
    path = tmp_path / "woo.csv"
    path.write_text("ID,Name,Attribute 1 name,Attribute 1 value(s),Attribute 2 name,Attribute 2 value(s)\n"
                    "1,Hoodie,Color,\"Blue, Green\",Material,Cotton\n"
                    "2,Cap,Color,Red,,\n")
    items, _ = read_items(path)
    assert items["Color"].tolist() == ["Blue|Green", "Red"] and items["Material"].tolist() == ["Cotton", ""]


def test_an_item_id_repeated_with_a_title_is_still_refused(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("item_id,title\na,Shirt\na,Shirt again\n")
    with pytest.raises(DataError, match="item_id"):
        read_items(path)


_NO_ROWS = pd.DataFrame({"query": pd.Series([], dtype=object), "item_idx": pd.Series([], dtype="int64"),
                         "label": pd.Series([], dtype="float32"), "weight": pd.Series([], dtype="float32")})


# WooCommerce's export: a variable product, its variations naming it as their `Parent` (by SKU
# or `id:`), a simple product; `Type` is how the shop stores each, not a kind
WOOCOMMERCE = """ID,Type,SKU,Name,Description,Regular price,Categories,Images,Parent,Attribute 1 name,\
Attribute 1 value(s),Attribute 1 visible,Attribute 1 global
44,variable,woo-hoodie,Hoodie,A warm hoodie.,,Clothing > Hoodies,"https://x.test/h1.jpg, https://x.test/h2.jpg",,\
Color,"Blue, Green",1,1
45,variation,woo-hoodie-blue,Hoodie - Blue,,45,,https://x.test/hb.jpg,woo-hoodie,Color,Blue,,1
46,variation,woo-hoodie-green,Hoodie - Green,,42,,https://x.test/hg.jpg,id:44,Color,Green,,1
47,simple,woo-cap,Cap,A red cap.,18,Clothing > Accessories,https://x.test/cap.jpg,,Color,Red,1,1
48,variation,woo-lost,Scarf - Grey,,12,,,woo-scarf,Color,Grey,,1
49,simple,woo-belt,Belt,A leather belt.,25,Clothing > Accessories,"https://x.test/b1.jpg,https://x.test/b2.jpg",,,,,
"""


def test_a_woocommerce_variation_is_read_into_its_parent(tmp_path):
    path = tmp_path / "wc-product-export.csv"
    path.write_text(WOOCOMMERCE)
    items, report = read_items(path)
    # the scarf's parent is not in the file: it stays an item of its own
    assert items["item_id"].tolist() == ["woo-hoodie", "woo-cap", "woo-lost", "woo-belt"]
    hoodie = items.iloc[0]
    assert hoodie["title"] == "Hoodie" and hoodie["description"] == "A warm hoodie."
    assert hoodie["Color"] == "Blue|Green" and hoodie["Regular price"] == "42"
    assert "Type" not in items.columns and not any("Attribute" in c for c in items.columns)
    assert "Type: a platform's product types" in report.notices[1]
    assert report.notices[2].startswith("2 rows tied to a parent item by Parent read into that item")
    cat = Catalog.build(items)
    assert "images" not in {a.key for f in cat.facets for a in cat.vocab[f]}  # links, comma-separated


def test_a_search_log_that_names_variants_trains_on_their_products(export, tmp_path, capsys):
    """A shop's log names what was clicked by the variant's SKU; the catalogue's items are the
    products. Each SKU the export lists under a product is read as that product."""
    from cli.main import main

    log = tmp_path / "searches.csv"
    log.write_text("search_term,Variant SKU,clicks\nwhite shirt,LS-WHITE-S,3\nnavy shirt,LS-NAVY-M,2\n"
                   "red dress,WD-S,4\nsuede boots,CB-42,1\nold boots,CB-40,1\nshirt,linen-shirt,2\n")
    assert main(["train", "--items", str(export), "--interactions", str(log), "--out", str(tmp_path / "a"),
                 "--epochs", "1", "--json"]) == 0
    err = capsys.readouterr().err
    assert "4 rows name an item by a variant's id (its SKU, read into its product): read as that item" in err
    assert "skipped 1 row whose item_id is not in the items file: lines 6" in err  # CB-40 is in no row


def test_a_version_keeps_its_variants_ids_for_pages_judgments_and_rules(export, tmp_path):
    """A shop's site knows a product page, a judgment or a pin by the variant a shopper saw;
    the version trained on the export keeps each SKU as its product's other id."""
    from recsys.artifact import load_version
    from recsys.io.readers import read_judgments
    from recsys.rules import Rule, matching_items
    from training.train import TrainInputs, train

    version = train(TrainInputs(items=export, interactions=None), tmp_path / "a", TrainConfig(seed=0)).version_dir
    rec = load_version(version)
    assert rec.catalog.aliases == {"LS-NAVY-S": "linen-shirt", "LS-NAVY-M": "linen-shirt",
                                   "LS-WHITE-S": "linen-shirt", "WD-S": "wrap-dress", "WD-M": "wrap-dress",
                                   "CB-42": "chelsea-boots"}
    assert rec.explain("white shirt", "LS-WHITE-S").item_id == "linen-shirt"
    asked, like = rec.similar("LS-NAVY-M", k=5, same=())
    assert asked.item_id == "linen-shirt" and "linen-shirt" not in [i.item_id for i in like.items]
    assert [i.item_id for i in rec.recommend("shirt", k=3, exclude=["LS-NAVY-S"]).items] == [
        i.item_id for i in rec.recommend("shirt", k=3, exclude=["linen-shirt"]).items]
    pin = Rule(name="boots first", kind="pin", item_id="CB-42", position=1)
    assert [rec.catalog.item_ids[i] for i in matching_items(pin, rec.catalog)] == ["chelsea-boots"]
    judged = tmp_path / "judgments.csv"
    judged.write_text("query,item_id,grade\nwhite shirt,LS-WHITE-S,3\nred dress,wrap-dress,2\n")
    df, report = read_judgments(judged, set(rec.catalog.item_ids), aliases=rec.catalog.aliases)
    assert df["item_id"].tolist() == ["linen-shirt", "wrap-dress"]
    assert report.notices == ["1 row names an item by a variant's id (its SKU, read into its product): "
                              "read as that item"]
    assert rec.catalog.canonical("CB-40") == "CB-40" and not rec.catalog.has("CB-40")  # in no row


def test_a_version_whose_variant_names_no_item_is_refused(export, tmp_path):
    import json

    from recsys.artifact import load_version
    from recsys.errors import ArtifactError
    from recsys.io.text import fingerprint
    from training.train import TrainInputs, train

    version = train(TrainInputs(items=export, interactions=None), tmp_path / "a", TrainConfig(seed=0)).version_dir
    catalog = json.loads((version / "catalog.json").read_text())
    catalog["aliases"]["LS-PINK-S"] = "no-such-item"
    (version / "catalog.json").write_text(json.dumps(catalog))
    manifest = json.loads((version / "manifest.json").read_text())
    manifest["files"]["catalog.json"] = fingerprint(version / "catalog.json")  # as a writer with a bug would
    (version / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match=r"catalog\.json.*'aliases' must map ids that are not item_ids to item_ids"):
        load_version(version)


# Squarespace's product export, trimmed: a variant row has its own SKU and variant id, and
# neither the product's id nor a title; `Option Name 1` / `Option Value 1` pairs
SQUARESPACE = """Product ID [Non Editable],Variant ID [Non Editable],Product Type [Non Editable],Product URL,\
Title,Description,SKU,Option Name 1,Option Value 1,Option Name 2,Option Value 2,Price,Categories,Visible
61a1,7a01,PHYSICAL,linen-shirt,Linen Shirt,<p>A relaxed linen shirt.</p>,SQ01,Color,Navy,Size,S,49.00,Shirts,Yes
,7a02,,,,,SQ02,,Navy,,M,52.50,,
,7a03,,,,,SQ03,,White,,S,49.00,,
61a2,7a04,PHYSICAL,wrap-dress,Crimson Wrap Dress,<p>A red cotton wrap dress.</p>,SQ04,Size,S,,,89.00,Dresses,Yes
61a3,7a05,DIGITAL,gift-card,Gift Card,<p>For anything in the shop.</p>,SQ05,,,,,25.00,Gifts,Yes
"""


@pytest.mark.parametrize("repeated", [False, True], ids=["first-row-id", "every-row-id"])
def test_a_squarespace_export_reads_one_item_a_product(tmp_path, repeated):
    text = SQUARESPACE.replace("\n,7a0", "\n61a1,7a0") if repeated else SQUARESPACE
    path = tmp_path / "squarespace.csv"
    path.write_text(text)
    items, report = read_items(path)
    assert items["item_id"].tolist() == ["61a1", "61a2", "61a3"]
    shirt = items.iloc[0]
    assert (shirt["title"], shirt["Color"], shirt["Size"]) == ("Linen Shirt", "Navy|White", "S|M")
    assert shirt["Price"] == "49.00"
    assert items.iloc[1]["Size"] == "S" and items.iloc[1]["Color"] == ""
    assert not any(c.startswith("Option") for c in items.columns)
    assert "Product Type [Non Editable]" not in items.columns  # PHYSICAL, DIGITAL: how it ships, not a kind
    tied = "with the item_id of the row above and no title" if repeated else "with no item_id and no title"
    assert f"2 rows {tied} read into that item (a product's variants and images): 3 items" in report.notices
    assert report.aliases == {"SQ01": "61a1", "SQ02": "61a1", "SQ03": "61a1", "7a01": "61a1", "7a02": "61a1",
                              "7a03": "61a1", "SQ04": "61a2", "7a04": "61a2", "SQ05": "61a3", "7a05": "61a3"}
    rec = untrained_recommender(Catalog.build(items), _NO_ROWS, TrainConfig(seed=0))
    white = rec.catalog.filter_mask({"color": ["white"]})
    assert [rec.catalog.item_ids[i] for i in np.flatnonzero(white)] == ["61a1"]
    assert rec.recommend("white linen shirt", k=1).items[0].item_id == "61a1"


def test_a_first_row_without_an_item_id_is_still_refused(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("Product ID [Non Editable],Title,SKU\n,,SQ01\n61a1,Shirt,SQ02\n")
    with pytest.raises(DataError, match="row 2, column 'item_id': expected a non-empty item_id"):
        read_items(path)


# BigCommerce's product export (the Bulk Edit template): `Item Type` says what each row is, a
# SKU row's name says its options, a Rule row sets a variant's price
BIGCOMMERCE = """Item Type,Product ID,Product Name,Product Type,Product Code/SKU,Brand Name,Product Description,\
Price,Category
Product,112,Linen Shirt,P,LS,Harbor,<p>A relaxed linen shirt.</p>,49.00,Shop All/Shirts
SKU,,"[S]Size=Small,[RT]Color=Navy",,LS-S-NAVY,,,,
SKU,,"[S]Size=Medium,[RT]Color=White",,LS-M-WHITE,,,,
Rule,,,,LS-M-WHITE,,,52.50,
Product,113,Brown Suede Boots,P,CB,Harbor,<p>Chelsea boots.</p>,129.00,Shop All/Boots
"""
# its newer export: `Item` is Product, Variant or Image
BIGCOMMERCE_ITEM = """Item,ID,Name,Type,SKU,Price,Image URL (Import)
Product,77,Canvas Tote,Physical,TOTE,25.00,
Variant,501,,,TOTE-RED,25.00,
Variant,502,,,TOTE-BLUE,27.00,
Image,9001,,,,,https://cdn.example.com/tote.jpg
Product,78,Water Bottle,Physical,BOTTLE,15.00,
"""


def test_a_bigcommerce_export_reads_a_product_s_rows_into_it(tmp_path):
    path = tmp_path / "bigcommerce.csv"
    path.write_text(BIGCOMMERCE)
    items, report = read_items(path)
    assert items["item_id"].tolist() == ["112", "113"]
    assert items["title"].tolist() == ["Linen Shirt", "Brown Suede Boots"]
    shirt = items.iloc[0]
    assert (shirt["Size"], shirt["Color"], shirt["Price"]) == ("Small|Medium", "Navy|White", "49.00")
    assert "Item Type" not in items.columns and "Product Type" not in items.columns  # P: physical, not a kind
    assert report.aliases == {"LS": "112", "LS-S-NAVY": "112", "LS-M-WHITE": "112", "CB": "113"}
    assert ("2 rows whose Item Type is not Product and 1 row with no item_id and no title read into that item "
            "(a product's variants and images): 2 items") in report.notices
    rec = untrained_recommender(Catalog.build(items), _NO_ROWS, TrainConfig(seed=0))
    assert rec.recommend("white shirt", k=1).items[0].item_id == "112"

    path.write_text(BIGCOMMERCE_ITEM)
    items, report = read_items(path)
    assert items["item_id"].tolist() == ["TOTE", "BOTTLE"] and items.iloc[0]["Price"] == "25.00"
    assert report.aliases == {"77": "TOTE", "501": "TOTE", "502": "TOTE", "9001": "TOTE", "TOTE-RED": "TOTE",
                              "TOTE-BLUE": "TOTE", "78": "BOTTLE"}


@pytest.mark.parametrize(("rule_price", "price"), [("[ADD]10.00", "50.00"), ("[REMOVE]5.00", "50.00"),
                                                  ("[FIXED]45.00", "45.00")])
def test_a_bigcommerce_rule_s_price_adjustment_is_no_price_of_its_own(tmp_path, rule_price, price):
    path = tmp_path / "bigcommerce.csv"
    path.write_text("Item Type,Product ID,Product Name,Product Code/SKU,Price\n"
                    "Product,100,Trail Tent,BC-0,50.00\n"
                    "  SKU,,[RB]Color=Red,BC-0-R,\n"
                    f"  Rule,,[RB]Color=Red,,{rule_price}\n"
                    "Product,101,Trail Pack,BC-1,64.00\n")
    items, _ = read_items(path)
    assert items["Price"].tolist() == [price, "64.00"]
    assert "price" in Catalog.build(items).range_keys()  # numbers: a range filter takes it


def test_an_item_column_of_other_words_is_a_column_like_any_other(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("sku,title,item\nA1,Shirt,product\nA2,Shoes,footwear\n")
    items, _ = read_items(path)
    assert items["item_id"].tolist() == ["A1", "A2"] and items["item"].tolist() == ["product", "footwear"]


def test_an_id_two_products_share_or_an_item_s_own_names_no_variant(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("Handle,Title,Variant SKU\na,Shirt,A-1\na,,SHARED\nb,Dress,b\nb,,SHARED\nb,,B-2\n")
    _, report = read_items(path)
    assert report.aliases == {"A-1": "a", "B-2": "b"}


# a Google Merchant feed (tab-separated): each variant a row with its own id and title, grouped
# by `item_group_id`
MERCHANT = "\n".join("\t".join(row) for row in [
    ["id", "title", "description", "link", "image_link", "price", "brand", "product_type", "color", "size",
     "item_group_id"],
    ["SH-N-M", "Linen Shirt - Navy / M", "A relaxed linen shirt.", "https://shop.test/p/1", "https://shop.test/1.jpg",
     "52.00 USD", "Harbor", "Apparel > Shirts", "Navy", "M", "SH"],
    ["SH-W-S", "Linen Shirt - White / S", "A relaxed linen shirt.", "https://shop.test/p/2",
     "https://shop.test/2.jpg", "49.00 USD", "Harbor", "Apparel > Shirts", "White", "S", "SH"],
    ["DR-1", "Wrap Dress", "A red dress.", "https://shop.test/p/3", "https://shop.test/3.jpg", "89.00 USD",
     "Nordic", "Apparel > Dresses", "Red", "S", ""],
    ["SH-N-S", "Linen Shirt - Navy / S", "A relaxed linen shirt.", "https://shop.test/p/4",
     "https://shop.test/4.jpg", "52.00 USD", "Harbor", "Apparel > Shirts", "Navy", "S", "SH"],
]) + "\n"


def test_a_merchant_feed_s_variants_are_one_item_each_group(tmp_path):
    path = tmp_path / "feed.tsv"
    path.write_text(MERCHANT)
    items, report = read_items(path)
    assert items["item_id"].tolist() == ["SH-N-M", "DR-1"] and "item_group_id" not in items.columns
    shirt = items.iloc[0]
    assert shirt["title"] == "Linen Shirt"  # the words every variant's title has
    assert shirt["color"] == "Navy|White" and shirt["size"] == "M|S"
    assert shirt["price"] == "49.00 USD"  # the least price, as the feed writes it
    assert report.aliases == {"SH-W-S": "SH-N-M", "SH-N-S": "SH-N-M"}
    assert "2 rows with the item_group_id of an earlier row read into that item" in report.notices[-1]


# Magento 2's product export: a configurable product lists its children (`configurable_variations`),
# each a simple product with its own row; `additional_attributes` is `key=value,key=value`
MAGENTO = """sku,store_view_code,product_type,name,description,price,additional_attributes,configurable_variations
MH01,,configurable,Chaz Hoodie,<p>A warm hoodie.</p>,52,material=Cotton|Polyester,\
"sku=MH01-XS-Black,size=XS,color=Black|sku=MH01-S-Blue,size=S,color=Blue"
MH01-XS-Black,,simple,Chaz Hoodie-XS-Black,,52,"color=Black,material=Cotton|Polyester,size=XS",
MH01-S-Blue,,simple,Chaz Hoodie-S-Blue,,54,"color=Blue,material=Cotton|Polyester,size=S",
WB04,,simple,Overnight Duffle,<p>A roomy bag.</p>,45,"color=Black,strap=Adjustable",
WB04,de_de,,Reisetasche,<p>Eine geräumige Tasche.</p>,,,
WB05,,simple,Wayfarer Messenger Bag,<p>A messenger bag.</p>,45,"color=Brown,strap=Adjustable",
"""


def test_a_magento_configurable_product_takes_its_children(tmp_path):
    path = tmp_path / "catalog_product.csv"
    path.write_text(MAGENTO)
    items, report = read_items(path)
    assert items["item_id"].tolist() == ["MH01", "WB04", "WB05"] and "product_type" not in items.columns
    assert items.iloc[0]["title"] == "Chaz Hoodie" and items.iloc[0]["price"] == "52"
    assert report.aliases == {"MH01-XS-Black": "MH01", "MH01-S-Blue": "MH01"}
    cat = Catalog.build(items)
    hoodie = cat.attribute_labels(0)
    assert sorted(hoodie["color"]) == ["black", "blue"]  # Magento's pairs are spec lists: `color` feeds colour
    # the children's multi-select values stay their key's (read apart at `|`, "Polyester" was a size)
    assert sorted(a for a in hoodie["other"] if a.startswith(("material:", "size:"))) == [
        "material:cotton", "material:polyester", "size:s", "size:xs"]
    # a store view's row of a product (its words, its sku again) is left out, and said
    assert "store_view_code" not in items.columns and cat.titles[1] == "Overnight Duffle"
    assert "left out 1 store-view row (store_view_code de_de)" in " ".join(report.notices)


def test_a_product_keeps_every_variant_s_size_and_its_least_price(tmp_path):
    """Of numbers, only prices are the least (the price a shop says "from"): sizes 36, 38 and 40
    were read as 36, so a filter on size 38 found nothing."""
    path = tmp_path / "feed.csv"
    path.write_text("id,parent_id,title,Preis,size,cost,capacity\n"
                    "K1,,Sommerkleid,,,,\n"
                    "K1-36,K1,Sommerkleid 36,\"39,99 €\",36,20,\n"
                    "K1-38,K1,Sommerkleid 38,\"41,99 €\",38,18,\n"
                    "K1-40,K1,Sommerkleid 40,\"39,99 €\",40,22,\n"
                    "B1,,Flasche,,,,\n"
                    "B1-5,B1,Flasche klein,,,,0.5 l\n"
                    "B1-1,B1,Flasche gross,,,,1 l\n")
    items, _ = read_items(path)
    dress, bottle = items.iloc[0], items.iloc[1]
    assert dress["size"] == "36|38|40" and dress["Preis"] == "39,99 €" and dress["cost"] == "18"
    assert bottle["capacity"] == "0.5 l|1 l"
    cat = Catalog.build(items)
    assert cat.filter_mask({"size": ["38"]}).tolist() == [True, False]


@pytest.mark.parametrize("prices, said", [
    (["USD 89.00", "79,00 EUR", "£69.00", "$12.00"], "3 currencies (EUR, GBP, USD)"),
    (["19,99 €", "CHF 18.–", "24,90 Fr."], "2 currencies (CHF, EUR)"),
])
def test_prices_in_several_currencies_are_said_to_be_compared_as_plain_numbers(tmp_path, prices, said):
    path = tmp_path / "feed.csv"
    path.write_text("item_id,title,price,model\n" + "".join(
        f"P{n},Thermobecher {n},{p if ',' not in p else chr(34) + p + chr(34)},DLM {n}10\n"
        for n, p in enumerate(prices)))
    _, report = read_items(path)
    notes = [n for n in report.notices if "currencies" in n]
    assert len(notes) == 1 and f"column 'price' names prices in {said}" in notes[0], report.notices
    assert "never converted" in notes[0]


def test_prices_in_one_currency_say_nothing_of_currencies(tmp_path):
    path = tmp_path / "feed.csv"
    path.write_text('item_id,title,price,model\nP1,Becher,"19,99 €",DLM 1310\nP2,Tasse,EUR 5,XYZ 20\n'
                    "P3,Kanne,12.50,ABC 7\n")
    _, report = read_items(path)
    assert not [n for n in report.notices if "currencies" in n], report.notices


def test_each_variants_barcode_is_kept_a_shopper_may_type_any(tmp_path):
    """Barcodes are numbers, and of numbers a product keeps the least (its price "from"): a
    shopper who typed the other variant's barcode found nothing."""
    path = tmp_path / "products_export.csv"
    path.write_text("Handle,Title,Option1 Name,Option1 Value,Variant SKU,Variant Price,Variant Barcode\n"
                    "linen-shirt,Linen Shirt,Color,Navy,LS-NAVY,52.00,400000000002\n"
                    "linen-shirt,,,White,LS-WHITE,49.00,400000000001\n"
                    "wool-beanie,Wool Beanie,Color,Grey,WB-GREY,19.00,500000000009\n")
    items, _ = read_items(path)
    assert items["Variant Barcode"].tolist() == ["400000000002|400000000001", "500000000009"]
    assert items["Variant Price"].tolist() == ["49.00", "19.00"]
    rec = untrained_recommender(Catalog.build(items), pd.DataFrame(
        {"query": [], "item_idx": [], "label": [], "weight": []}), TrainConfig(seed=0))
    assert rec.recommend("400000000001", k=1).items[0].item_id == "linen-shirt"
